#!/usr/bin/env bash
# The prod profile's certificates: one private CA for the profile, and the certificates its TLS
# connections use (the Temporal frontend with mutual TLS, PostgreSQL with TLS, the app processes'
# client certificate). Idempotent: a directory that already holds a complete set is kept as it is.
#
#   scripts/prod/certs.sh DIR
#
# DIR afterwards (keys are PKCS#8 P-256, readable by the owner only):
#   ca.pem / .key                the profile's CA (what every client and server trusts)
#   temporal-server.pem / .key   the Temporal server: frontend and internode (server and client auth)
#   postgres-server.pem / .key   PostgreSQL's server certificate
#   client.pem / .key            the gateways', workers', admin CLI's and scripts' client certificate
#   ui.pem / .key                the Temporal Web UI's client certificate
#   intruder-ca.pem, intruder.pem / .key
#                                a certificate from a CA nobody trusts (tests: a client the server refuses)
# Every server certificate names localhost and 127.0.0.1, so clients verify the host name.
set -euo pipefail

dir=${1:?usage: scripts/prod/certs.sh DIR}
command -v openssl >/dev/null || { echo "[certs] openssl is needed" >&2; exit 1; }
mkdir -p "$dir"
[[ -f $dir/.complete ]] && exit 0
umask 077
tmp=$(mktemp -d "$dir/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # ca NAME SUBJECT
  key "$tmp/$1.key"
  openssl req -x509 -new -key "$tmp/$1.key" -sha256 -days 3650 -subj "$2" -out "$tmp/$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

leaf() { # leaf NAME CA SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAMES]
  local name=$1 issuer=$2 subject=$3 eku=$4 san=${5:-}
  key "$tmp/$name.key"
  openssl req -new -key "$tmp/$name.key" -subj "$subject" -out "$tmp/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$eku"
    [[ -n $san ]] && echo "subjectAltName=$san"
  } >"$tmp/$name.ext"
  openssl x509 -req -in "$tmp/$name.csr" -CA "$tmp/$issuer.pem" -CAkey "$tmp/$issuer.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$tmp/$name.ext" -out "$tmp/$name.pem" 2>/dev/null
  rm -f "$tmp/$name.csr" "$tmp/$name.ext"
}

ca ca "/CN=mediagen prod-profile CA"
leaf temporal-server ca "/CN=temporal-server" serverAuth,clientAuth "DNS:localhost,IP:127.0.0.1"
leaf postgres-server ca "/CN=postgres-server" serverAuth "DNS:localhost,IP:127.0.0.1"
leaf client ca "/CN=mediagen-app" clientAuth
leaf ui ca "/CN=temporal-ui" clientAuth
ca intruder-ca "/CN=a CA nobody trusts"
leaf intruder intruder-ca "/CN=intruder" clientAuth
rm -f "$tmp"/*.srl "$tmp/intruder-ca.key"

chmod 644 "$tmp"/*.pem
mv "$tmp"/* "$dir/"
touch "$dir/.complete"
