# shellcheck shell=bash
# The `prod` profile of scripts/stack.sh (sourced by it; not run on its own): the production
# topology on this machine, every part on loopback with ports of its own.
#
#   PostgreSQL        the profile's own cluster: `mediagen` for the service (the gateways and
#                     workers as `mediagen_app`, DML only; migrations as the owner), `temporal` and
#                     `temporal_visibility` for the Temporal server (schemas by temporal-sql-tool);
#                     TCP over TLS only (pg_hba refuses plain connections), every client with
#                     sslmode=verify-full against the profile's CA ($STATE/certs, scripts/prod/certs.sh)
#   Temporal server   1.32.0 built from the Go module proxy, Postgres persistence and SQL
#                     visibility, 512 history shards (temporal-server.yaml), namespace `default`,
#                     our search attributes
#   Temporal Web UI   ui-server built from the Go module proxy, pointed at that server
#   MinIO             as in the other profiles
#   gateway-1, -2     two `node dist/api/server.js` replicas
#   worker-core       `--roles workflows,io,reconciler`
#   worker-fetch      `--roles fetch` (remote inputs and upload-from-url: the SSRF-exposed role apart)
#   worker-webhooks   `--roles webhooks` (deliveries: receivers that hang hold only its slots)
#   worker-local-1,-2 `--roles provider:local`, the provider fleet of the local renderer
#   worker-fal, -xai  `--roles provider:fal` / `provider:xai`, the fleets of grok-video's two live
#                     routes (idle while PROVIDERS_MODE=local)
#   (the list is scripts/prod/processes)
#   codec-server      `node dist/codec/server.js`: decodes payloads for the Web UI and the CLI
#                     (payloads are AES-GCM sealed under $STATE/payload-codec.keys, made once)
#
# Overrides for a suite that points the profile at local fake providers: $STATE/overrides.env holds
# NAME=value lines given to every gateway and worker after the profile's own variables (so they win).
# `up` replaces every process started under other overrides; removing the file and running `up`
# again restores the profile.
#
# Rainbow deploys: each build's processes run from a copy of its dist/ in a directory of their own
# ($STATE/builds/<build id>/: app/, the pid files and logs/), so a rebuild (npm test deletes dist/)
# cannot pull files from under them. Every worker polls as Worker Deployment `mediagen`, version =
# the build id (dist/build-id, or PROD_DIST=dir/ to deploy another built dist/). `up` with a new
# build starts its workers BESIDE the running build's and replaces the two gateways; the new build
# makes itself current once its fleets poll every queue (WORKER_DEPLOYMENT_PROMOTE=newer), and the
# old build's workers keep serving the jobs pinned to it until the server reports it drained, then
# stop by themselves (WORKER_DRAIN_CHECK_MS); the next `up` removes a drained build's directory.
# A restarted worker of an old build never makes it current again. Otherwise `up` reuses every
# process that is still alive and starts the missing ones of every build not drained (a killed
# worker comes back with the next `up prod`). $STATE/<name>.pid and $STATE/logs/<name>.log name
# the newest build's processes.

TEMPORAL_APP_TLS=() # the app processes' TEMPORAL_TLS_* variables (prod_certs)
TEMPORAL_SERVER_MODULE=go.temporal.io/server
TEMPORAL_SERVER_VERSION=v1.32.0           # same server as the Temporal CLI's dev server (1.9.1)
TEMPORAL_UI_MODULE=github.com/temporalio/ui-server/v2
TEMPORAL_UI_VERSION=v2.54.1               # the UI the Temporal CLI 1.9.1 embeds
TEMPORAL_SERVER_DIR="$CACHE_DIR/temporal-server-$TEMPORAL_SERVER_VERSION"
TEMPORAL_UI_DIR="$CACHE_DIR/temporal-ui-server-$TEMPORAL_UI_VERSION"

# The processes and their roles, from one list that docker-compose.yml follows too.
PROD_GATEWAYS=()
PROD_WORKERS=()
declare -A PROD_ROLES=()
while read -r _name _command _roles; do
  case $_command in
    gateway) PROD_GATEWAYS+=("$_name") ;;
    worker) PROD_WORKERS+=("$_name"); PROD_ROLES[$_name]=$_roles ;;
  esac
done < <(grep -v '^#' "$ROOT/scripts/prod/processes")
unset _name _command _roles

# ---------------------------------------------------------------- install (cached Go builds)
copy_temporal_schemas() { # copy_temporal_schemas DIR — the module's Postgres schemas into DIR/schema
  # temporal-sql-tool embeds the base schemas but not the versioned updates: keep the module's.
  local mod
  mod=$(cd "$1" && go mod download -json "$TEMPORAL_SERVER_MODULE@$TEMPORAL_SERVER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $mod/schema/postgresql/v12 ]] || return 1
  mkdir -p "$1/schema/postgresql"
  cp -r "$mod/schema/postgresql/v12" "$1/schema/postgresql/"
  chmod -R u+w "$1/schema"
}

go_build_cached() { # go_build_cached DIR "what" AFTER PKG@VERSION... — go install into DIR once, then AFTER DIR
  local dir=$1 what=$2 after=$3; shift 3
  [[ -f $dir/.installed ]] && return 0
  mkdir -p "$CACHE_DIR"
  ( # one build at a time for every profile and checkout; re-checked under the lock
    flock -w 1200 8 || die "another build holds $dir.lock"
    [[ -f $dir/.installed ]] && exit 0
    command -v go >/dev/null || die "Go is needed to build $what"
    log "building $what with go install (first run only; a few minutes)"
    local tmp="$dir.tmp" pkg
    rm -rf "$tmp"; mkdir -p "$tmp"
    for pkg in "$@"; do
      GOBIN=$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install "$pkg" >&2 || { rm -rf "$tmp"; die "go install $pkg failed"; }
    done
    "$after" "$tmp" || { rm -rf "$tmp"; die "$what: $after failed"; }
    # Binaries of an earlier build without the marker are replaced as a whole.
    rm -rf "$dir"; mv "$tmp" "$dir"
    touch "$dir/.installed"
  ) 8>"$dir.lock"
}

install_prod() {
  # A cache that already holds the two binaries (built by hand with the same go install) only
  # gains the schema files: no rebuild.
  if [[ ! -f $TEMPORAL_SERVER_DIR/.installed && -x $TEMPORAL_SERVER_DIR/server && -x $TEMPORAL_SERVER_DIR/sql \
    && $("$TEMPORAL_SERVER_DIR/server" --version 2>/dev/null) == *"version ${TEMPORAL_SERVER_VERSION#v}" ]]; then
    ( flock -w 1200 8 || die "another build holds $TEMPORAL_SERVER_DIR.lock"
      [[ -f $TEMPORAL_SERVER_DIR/.installed ]] && exit 0
      copy_temporal_schemas "$TEMPORAL_SERVER_DIR" || exit 0   # the full build below takes over
      touch "$TEMPORAL_SERVER_DIR/.installed"
    ) 8>"$TEMPORAL_SERVER_DIR.lock"
  fi
  go_build_cached "$TEMPORAL_SERVER_DIR" "Temporal server $TEMPORAL_SERVER_VERSION" copy_temporal_schemas \
    "$TEMPORAL_SERVER_MODULE/cmd/server@$TEMPORAL_SERVER_VERSION" "$TEMPORAL_SERVER_MODULE/cmd/tools/sql@$TEMPORAL_SERVER_VERSION"
  go_build_cached "$TEMPORAL_UI_DIR" "Temporal UI server $TEMPORAL_UI_VERSION" : \
    "$TEMPORAL_UI_MODULE/cmd/server@$TEMPORAL_UI_VERSION"
}

# ---------------------------------------------------------------- Temporal server (Postgres)


prod_ports() { # the profile's Temporal ports: chosen once, kept with its data (cluster metadata names them)
  local f=$STATE/temporal-ports.env name
  if [[ ! -f $f ]]; then
    local names=()
    for name in FRONTEND FRONTEND_MEMBERSHIP FRONTEND_HTTP MATCHING MATCHING_MEMBERSHIP HISTORY HISTORY_MEMBERSHIP \
      WORKER WORKER_MEMBERSHIP METRICS UI; do names+=("TEMPORAL_${name}_PORT"); done
    listen_ports "${names[@]}" >"$f.tmp" || die "could not choose the profile's ports"
    mv "$f.tmp" "$f"
  fi
  # shellcheck disable=SC1090
  source "$f"
}

temporal_sql() { # temporal_sql DB ARGS... — temporal-sql-tool on the profile's cluster
  local db=$1; shift
  # Over TLS with host verification (the tool's default once --tls is on), as the server connects.
  "$TEMPORAL_SERVER_DIR/sql" --plugin postgres12 --ep 127.0.0.1 -p "$PG_PORT" -u postgres --db "$db" \
    --tls --tls-ca-file "$STATE/certs/ca.pem" "$@"
}

configured_history_shards() { sed -n 's/^ *numHistoryShards: *\([0-9][0-9]*\).*/\1/p' "$ROOT/scripts/prod/temporal-server.yaml"; }

created_history_shards() { # the shard count the profile's Temporal cluster was created with; empty before its first start
  psql "postgres://postgres@127.0.0.1:$PG_PORT/temporal" -Atqc \
    "select encode(data, 'hex') from cluster_metadata_info limit 1" 2>/dev/null \
    | python3 -c 'import sys
b = bytes.fromhex(sys.stdin.read().strip() or "")
i = 0
def varint():
    global i
    n = s = 0
    while True:
        c = b[i]; i += 1; n |= (c & 0x7f) << s; s += 7
        if c < 0x80: return n
while i < len(b):  # ClusterMetadata: field 2 (varint) is history_shard_count
    key = varint(); field, kind = key >> 3, key & 7
    if kind == 0:
        v = varint()
        if field == 2: print(v); break
    elif kind == 2: n = varint(); i += n
    elif kind == 1: i += 8
    elif kind == 5: i += 4
    else: break' || true   # no database yet: nothing printed
}

recreate_temporal_if_shards_differ() {
  # The shard count is fixed when the cluster is created: a cluster made by an earlier config (4
  # shards) cannot take the configured count, so its two databases go (the profile is throwaway:
  # every workflow history of it is lost, the service's own database stays).
  local want have db
  want=$(configured_history_shards)
  have=$(created_history_shards)
  [[ -z $have || $have == "$want" ]] && return 0
  log "temporal: its cluster was created with $have history shards and the config asks for $want (fixed at creation): recreating Temporal's databases"
  # The service processes go too: restarted by this `up`, their build becomes the new cluster's current version.
  stop_apps
  stop_pidfile "$STATE/temporal.pid"
  for db in temporal temporal_visibility; do
    psql "postgres://postgres@127.0.0.1:$PG_PORT/postgres" -qc "drop database if exists $db with (force)" >/dev/null \
      || die "could not drop database $db"
  done
}

setup_temporal_schemas() { # idempotent: create and set up once, then update to the module's latest
  local db dir
  for db in temporal temporal_visibility; do
    dir=temporal; [[ $db == temporal_visibility ]] && dir=visibility
    if ! psql "postgres://postgres@127.0.0.1:$PG_PORT/postgres" -Atqc "select 1 from pg_database where datname='$db'" | grep -q 1; then
      temporal_sql "$db" create-database >>"$STATE/temporal-schema-$db.log" 2>&1 || die "temporal-sql-tool could not create database $db"
    fi
    if ! psql "postgres://postgres@127.0.0.1:$PG_PORT/$db" -Atqc "select 1 from pg_tables where tablename='schema_version'" | grep -q 1; then
      temporal_sql "$db" setup-schema -v 0.0 >>"$STATE/temporal-schema-$db.log" 2>&1 || die "temporal-sql-tool setup-schema failed on $db"
    fi
    temporal_sql "$db" update-schema -d "$TEMPORAL_SERVER_DIR/schema/postgresql/v12/$dir/versioned" >>"$STATE/temporal-schema-$db.log" 2>&1 \
      || die "temporal-sql-tool update-schema failed on $db (see $STATE/temporal-schema-$db.log)"
  done
}

namespace_ready() { temporal operator namespace describe --address "$1" --namespace default "${TEMPORAL_CLI_TLS[@]}" >/dev/null 2>&1; }

# The profile's frontend demands mutual TLS: its certificates (scripts/prod/certs.sh, idempotent),
# the `temporal` CLI flags for them (stack.sh's CLI calls add TEMPORAL_CLI_TLS), and what every app
# process and the printed exports carry.
prod_certs() {
  TLS_DIR=$STATE/certs
  bash "$ROOT/scripts/prod/certs.sh" "$TLS_DIR" || die "could not make the profile's certificates in $TLS_DIR"
  TEMPORAL_CLI_TLS=(--tls-ca-path "$TLS_DIR/ca.pem" --tls-cert-path "$TLS_DIR/client.pem" --tls-key-path "$TLS_DIR/client.key" --tls-server-name localhost)
  # The server name is the certificate's DNS name: Node refuses an IP address as the TLS server name (SNI).
  TEMPORAL_APP_TLS=(TEMPORAL_TLS_CA_FILE="$TLS_DIR/ca.pem" TEMPORAL_TLS_CERT_FILE="$TLS_DIR/client.pem" TEMPORAL_TLS_KEY_FILE="$TLS_DIR/client.key"
    TEMPORAL_TLS_SERVER_NAME=localhost)
}

up_temporal_server() {
  if [[ -n ${TEMPORAL_ADDRESS:-} ]]; then up_temporal; return; fi
  prod_ports
  prod_certs
  local address="127.0.0.1:$TEMPORAL_FRONTEND_PORT"
  if [[ -f $STATE/pg.port ]]; then PG_PORT=$(cat "$STATE/pg.port"); recreate_temporal_if_shards_differ; fi
  if pid_alive "$STATE/temporal.pid" && temporal_ready "$address"; then
    log "temporal: reusing the running server on port $TEMPORAL_FRONTEND_PORT"
  else
    [[ -f $STATE/pg.port ]] || die "the profile's PostgreSQL is not running"
    setup_temporal_schemas
    stop_pidfile "$STATE/temporal.pid"
    TEMPORAL_PG_PORT=$PG_PORT TEMPORAL_PG_CA_FILE="$STATE/certs/ca.pem" TEMPORAL_DYNAMIC_CONFIG="$ROOT/scripts/prod/temporal-dynamicconfig.yaml" \
    TEMPORAL_FRONTEND_PORT=$TEMPORAL_FRONTEND_PORT TEMPORAL_FRONTEND_MEMBERSHIP_PORT=$TEMPORAL_FRONTEND_MEMBERSHIP_PORT \
    TEMPORAL_FRONTEND_HTTP_PORT=$TEMPORAL_FRONTEND_HTTP_PORT TEMPORAL_MATCHING_PORT=$TEMPORAL_MATCHING_PORT \
    TEMPORAL_MATCHING_MEMBERSHIP_PORT=$TEMPORAL_MATCHING_MEMBERSHIP_PORT TEMPORAL_HISTORY_PORT=$TEMPORAL_HISTORY_PORT \
    TEMPORAL_HISTORY_MEMBERSHIP_PORT=$TEMPORAL_HISTORY_MEMBERSHIP_PORT TEMPORAL_WORKER_PORT=$TEMPORAL_WORKER_PORT \
    TEMPORAL_WORKER_MEMBERSHIP_PORT=$TEMPORAL_WORKER_MEMBERSHIP_PORT TEMPORAL_METRICS_PORT=$TEMPORAL_METRICS_PORT TEMPORAL_TLS_DIR=$TLS_DIR \
      setsid "$TEMPORAL_SERVER_DIR/server" --config-file "$ROOT/scripts/prod/temporal-server.yaml" --allow-no-auth start \
      >"$STATE/temporal.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/temporal.pid"
    wait_for_process "Temporal server" "$STATE/temporal.pid" "$STATE/temporal.log" temporal_ready "$address"
    log "temporal: started Temporal server ${TEMPORAL_SERVER_VERSION#v} on port $TEMPORAL_FRONTEND_PORT (Postgres persistence)"
  fi
  # A standalone server has no namespace until one is registered (the dev server makes `default`).
  if ! namespace_ready "$address"; then
    temporal operator namespace create --address "$address" --namespace default --retention 72h "${TEMPORAL_CLI_TLS[@]}" >/dev/null 2>&1 || true
    wait_for "namespace default" namespace_ready "$address"
  fi
  register_search_attributes "$address"
  # Without the dev server's forced refresh, a new attribute is usable once the server's cache
  # reloads (within a minute): wait for that here rather than fail the first jobs.
  wait_for "the search attributes to be usable" search_attributes_usable "$address"
  up_temporal_ui "$address"
  echo "export TEMPORAL_ADDRESS='$address'"
  echo "export TEMPORAL_UI_URL='http://127.0.0.1:$TEMPORAL_UI_PORT'"
  local kv
  for kv in "${TEMPORAL_APP_TLS[@]}"; do echo "export ${kv%%=*}='${kv#*=}'"; done
}

search_attributes_usable() {
  temporal workflow count --address "$1" --namespace default "${TEMPORAL_CLI_TLS[@]}" \
    --query "WorkspaceId = 'x' AND ProjectId = 'x' AND JobKind = 'x' AND MediaModel = 'x' AND JobStatus = 'x' AND ServingProvider = 'x' AND JobPriority = 'x'" >/dev/null 2>&1
}

ui_ready() { curl -sf -o /dev/null "$1"; }

up_temporal_ui() {
  local address=$1 url="http://127.0.0.1:$TEMPORAL_UI_PORT"
  if pid_alive "$STATE/temporal-ui.pid" && ui_ready "$url"; then
    log "temporal-ui: reusing the running Web UI at $url"
    return
  fi
  stop_pidfile "$STATE/temporal-ui.pid"
  # ui-server reads <config dir>/<env>.yaml; ours is a template it renders from these variables.
  codec_secrets
  TEMPORAL_ADDRESS=$address TEMPORAL_UI_PORT=$TEMPORAL_UI_PORT TEMPORAL_CORS_ORIGINS=$url TEMPORAL_TLS_DIR=$TLS_DIR \
    TEMPORAL_CODEC_ENDPOINT="http://127.0.0.1:$(cat "$STATE/codec-server.port")" \
    setsid "$TEMPORAL_UI_DIR/server" --root "$ROOT/scripts/prod" --config ui --env prod start \
    >"$STATE/temporal-ui.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE/temporal-ui.pid"
  wait_for_process "Temporal Web UI" "$STATE/temporal-ui.pid" "$STATE/temporal-ui.log" ui_ready "$url"
  log "temporal-ui: started at $url"
}

# ---------------------------------------------------------------- gateway and worker processes

stop_workers() { # stop_workers BUILD_DIR — the workers of one build, in parallel: each finishes its in-flight activities (WORKER_SHUTDOWN_GRACE_MS)
  local name
  # Each drains its in-flight activities (WORKER_SHUTDOWN_GRACE_MS; the fal and xAI fleets their
  # longest provider call plus 30 s, 60 s: activities/providers/call-timeouts.ts).
  for name in "${PROD_WORKERS[@]}"; do stop_pidfile "$1/$name.pid" 700 & done
  wait
}

stop_apps() { # every build's workers, then the gateways and the codec server
  local dir name
  for dir in "$STATE"/builds/*/; do [[ -d $dir ]] && stop_workers "${dir%/}"; done
  for name in "${PROD_GATEWAYS[@]}"; do stop_pidfile "$STATE/$name.pid"; done
  stop_pidfile "$STATE/codec-server.pid"
}

# The payload codec's keys and the codec server's operator token, made once and kept with the state
# (mode 600). A rotation appends `id:<32 random bytes in base64>` to payload-codec.keys and writes
# that id to payload-codec.active; the next `up` replaces every process (the files are part of the
# settings' hash), and payloads sealed under the older ids keep opening.
codec_secrets() {
  [[ -s $STATE/payload-codec.keys ]] || (umask 077; printf 'prod-1:%s\n' "$(head -c 32 /dev/urandom | base64)" >"$STATE/payload-codec.keys")
  [[ -s $STATE/payload-codec.active ]] || echo prod-1 >"$STATE/payload-codec.active"
  [[ -s $STATE/codec-server.token ]] || (umask 077; head -c 48 /dev/urandom | base64 | tr -d '/+=\n' >"$STATE/codec-server.token")
  [[ -f $STATE/codec-server.port ]] || free_port >"$STATE/codec-server.port"
}
codec_ready() { curl -sf -o /dev/null "http://127.0.0.1:$1/healthz"; }

build_drained() { grep -qs '"msg":"this build is drained' "$1"/logs/*.log; }

build_alive() { # build_alive BUILD_DIR — any of its workers running
  local name
  for name in "${PROD_WORKERS[@]}"; do pid_alive "$1/$name.pid" && return 0; done
  return 1
}

start_worker() { # start_worker BUILD_DIR NAME ENV... — one worker of a build, detached, with exactly ENV
  # and what its roles read of the overrides and role-scoped secrets (role_env, defined by up_apps)
  local dir=$1 name=$2 role_vars=(); shift 2
  mapfile -t role_vars < <(role_env "${PROD_ROLES[$name]}"; fleet_env "${PROD_ROLES[$name]}")
  stop_pidfile "$dir/$name.pid"
  env -i "$@" "${role_vars[@]}" WORKER_ROLES="${PROD_ROLES[$name]}" WORKFLOW_BUNDLE_PATH="$dir/app/dist/workflow-bundle.js" \
    WORKER_BUILD_ID="$(cat "$dir/app/dist/build-id")" \
    setsid node --enable-source-maps "$dir/app/dist/worker/main.js" >"$dir/logs/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$dir/$name.pid"
}

overrides_hash() { cat "$STATE/overrides.env" "$STATE/payload-codec.keys" "$STATE/payload-codec.active" "$STATE/s3-media-prefix.secret" 2>/dev/null | sha1sum | cut -c1-16; }

gateway_ready() { curl -sf -o /dev/null "http://127.0.0.1:$1/readyz"; }
worker_ready() { grep -q '"msg":"worker started"' "$1"; }

up_apps() { # needs the profile's DATABASE_URL, TEMPORAL_ADDRESS and S3_* in the environment
  local dist=${PROD_DIST:-$ROOT/dist}
  [[ -f $dist/api/server.js && -f $dist/worker/main.js && -f $dist/workflow-bundle.js && -f $dist/build-id ]] \
    || die "$dist is not built: run npm run build first"
  local build name port dir previous
  build=$(cat "$dist/build-id")
  [[ $build =~ ^[A-Za-z0-9._-]+$ ]] || die "$dist/build-id is not a build id"
  dir=$STATE/builds/$build
  previous=$(cat "$STATE/current-build" 2>/dev/null || true)
  # The running layout of an older checkout (one app for every process): replaced as before.
  if [[ -d $STATE/app ]]; then
    log "app: the processes of an older layout are replaced"
    for name in "${PROD_WORKERS[@]}"; do stop_pidfile "$STATE/$name.pid" 300 & done
    wait
    for name in "${PROD_GATEWAYS[@]}"; do stop_pidfile "$STATE/$name.pid"; done
    rm -rf "$STATE/app"
  fi
  if [[ ! -f $dir/app/.ready ]]; then
    rm -rf "$dir"; mkdir -p "$dir/app" "$dir/logs"
    cp -r "$dist" "$dir/app/dist"; cp "$ROOT/package.json" "$dir/app/"
    ln -s "$ROOT/node_modules" "$dir/app/node_modules"
    touch "$dir/app/.ready"
  fi
  local app=$dir/app
  if [[ -n $previous && $previous != "$build" ]]; then
    log "app: build $build starts beside build $previous (rainbow deploy): the gateways are replaced; $build becomes current once its fleets poll every queue, and $previous's workers stop by themselves once it drained"
    for name in "${PROD_GATEWAYS[@]}"; do stop_pidfile "$STATE/$name.pid"; done
    stop_pidfile "$STATE/codec-server.pid"
  fi
  echo "$build" >"$STATE/current-build"
  local overrides=() applied
  codec_secrets
  # The key of the job media prefixes, made once and kept with the state: every process needs the
  # same one, and none but the setup steps below may hold the MinIO root secret that would key
  # them otherwise (shared/storage.ts). Part of the settings' hash: a process started without it
  # is replaced by one that has it.
  [[ -s $STATE/s3-media-prefix.secret ]] || (umask 077; head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$STATE/s3-media-prefix.secret")
  applied=$(overrides_hash)
  if [[ $(cat "$STATE/overrides.applied" 2>/dev/null) != "$applied" ]]; then
    # Same build, other settings: its processes restart in place (its pinned jobs wait for them).
    log "app: the overrides changed: replacing the gateway and worker processes"
    stop_workers "$dir"
    for name in "${PROD_GATEWAYS[@]}"; do stop_pidfile "$STATE/$name.pid"; done
    stop_pidfile "$STATE/codec-server.pid"
    echo "$applied" >"$STATE/overrides.applied"
  fi
  [[ -s $STATE/overrides.env ]] && mapfile -t overrides < <(grep -E '^[A-Z][A-Z0-9_]*=' "$STATE/overrides.env")
  mkdir -p "$STATE/logs"
  # Secrets of the profile, made once and kept with its state: production refuses to start without
  # its own webhook secrets key, and the app role's password.
  local secret
  for secret in webhook-secrets.key app-db.password; do
    [[ -s $STATE/$secret ]] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$STATE/$secret")
  done
  # The gateways and workers connect as mediagen_app: rows only (db/roles.ts, granted by `migrate
  # --app-role` below); migrations, the seed and the admin CLI keep the profile's owner URL.
  psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qAt -v pw="$(cat "$STATE/app-db.password")" >/dev/null <<'SQL' || die "could not create the app role"
select 'create role mediagen_app login nosuperuser nocreatedb nocreaterole noreplication nobypassrls' where not exists (select from pg_roles where rolname = 'mediagen_app') \gexec
select format('alter role mediagen_app password %L', :'pw') \gexec
SQL
  local app_url
  app_url=$(sed -E "s#^(postgres(ql)?://)[^@/]*@#\1mediagen_app:$(cat "$STATE/app-db.password")@#" <<<"$DATABASE_URL")
  # Only these variables (env -i): nothing from the caller's shell (a test run's settings) leaks in.
  # Role-scoped secrets (provider keys, the webhook secrets key) are not common: each process gets
  # those its roles read (role_env below); every process learns which provider keys are set. No S3
  # keys either: each service process gets its fleet's identity (fleet_env), and only the setup
  # steps that need the owner's rights (the identities, the catalog's media) get the root keys.
  local common=(PATH="$PATH" HOME="$HOME" NODE_ENV=production LOG_LEVEL=info TASK_QUEUE_PREFIX=media
    DATABASE_URL="$app_url" TEMPORAL_ADDRESS="$TEMPORAL_ADDRESS" "${TEMPORAL_APP_TLS[@]}" S3_ENDPOINT="$S3_ENDPOINT"
    S3_BUCKET="$S3_BUCKET" S3_MEDIA_PREFIX_SECRET="$(cat "$STATE/s3-media-prefix.secret")"
    ALLOW_PLACEHOLDER_PROVIDERS=1 # the profile serves placeholder media on purpose
    PAYLOAD_CODEC_KEYS_FILE="$STATE/payload-codec.keys" PAYLOAD_CODEC_KEY_ID="$(cat "$STATE/payload-codec.active")")
  local scoped keys_set=() line
  scoped=$(node "$app/dist/scripts/role-secrets.js" --all)
  for line in "${overrides[@]}"; do
    [[ ${line%%=*} != WEBHOOK_SECRETS_KEY && -n ${line#*=} ]] && grep -qx "${line%%=*}" <<<"$scoped" && keys_set+=("${line%%=*}")
  done
  common+=(PROVIDER_KEYS_SET="$(IFS=,; echo "${keys_set[*]}")")
  # role_env ROLES: the overrides without the role-scoped secrets ROLES do not read, and the webhook
  # secrets key when they read it (shared/routing.ts secretsOfRoles, through dist/scripts/role-secrets.js).
  role_env() {
    local own name
    own=$(node "$app/dist/scripts/role-secrets.js" "$1")
    grep -qx WEBHOOK_SECRETS_KEY <<<"$own" && printf 'WEBHOOK_SECRETS_KEY=%s\n' "$(cat "$STATE/webhook-secrets.key")"
    for line in "${overrides[@]}"; do
      name=${line%%=*}
      if grep -qx "$name" <<<"$scoped" && ! grep -qx "$name" <<<"$own"; then continue; fi
      printf '%s\n' "$line"
    done
  }
  # fleet_env ROLES: the database URL and the storage keys of a process running ROLES (`gateway`,
  # or worker roles): its fleets' login role (db/fleet-roles.ts) and its storage identity.
  fleet_env() {
    local fleets=() r login identity=worker pw
    if [[ $1 == gateway ]]; then fleets=(gateway); identity=gateway; else
      for r in ${1//,/ }; do
        case $r in io) r=workflows ;; provider:*) r=provider ;; reconciler) identity=reconciler ;; esac
        [[ " ${fleets[*]} " == *" $r "* ]] || fleets+=("$r")
      done
    fi
    login=mediagen_$(IFS=_; echo "${fleets[*]}")
    [[ -s $STATE/db-$login.password ]] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$STATE/db-$login.password")
    pw=$(cat "$STATE/db-$login.password")
    {
      printf "select 'create role %s login nosuperuser nocreatedb nocreaterole noreplication nobypassrls' where not exists (select from pg_roles where rolname = '%s') %s\n" "$login" "$login" '\gexec'
      printf "select format('alter role %s password %%L', :'pw') %s\n" "$login" '\gexec'
      if ((${#fleets[@]} > 1)); then printf 'grant %s to %s;\n' "$(printf 'mediagen_%s,' "${fleets[@]}" | sed 's/,$//')" "$login"; fi
    } | psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qAt -v pw="$pw" >/dev/null || die "could not set up the database role $login"
    printf 'DATABASE_URL=%s\n' "$(sed -E "s#^(postgres(ql)?://)[^@/]*@#\1$login:$pw@#" <<<"$DATABASE_URL")"
    printf 'S3_ACCESS_KEY=mediagen-%s\nS3_SECRET_KEY=%s\n' "$identity" "$(cat "$STATE/s3-identities/$identity.secret")"
  }
  local own_env=()
  # One database role per fleet (db/fleet-roles.ts): mediagen_<fleet> logs in for a process of one
  # fleet; a process running several (worker-core) logs in as mediagen_<fleet>_<fleet>…, a member
  # of each. Made here like the app role, granted by `migrate --fleet-roles` below.
  local fleet_sql="" f
  for f in gateway workflows fetch provider webhooks reconciler; do
    fleet_sql+="select 'create role mediagen_$f login nosuperuser nocreatedb nocreaterole noreplication nobypassrls' where not exists (select from pg_roles where rolname = 'mediagen_$f') \\gexec"$'\n'
  done
  psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qAt >/dev/null <<<"$fleet_sql" || die "could not create the fleet roles"
  (cd "$app" && env -i "${common[@]}" DATABASE_URL="$DATABASE_URL" node dist/admin/main.js migrate --app-role mediagen_app --fleet-roles mediagen >"$STATE/logs/migrate.log" 2>&1) \
    || die "migrations failed (see $STATE/logs/migrate.log)"
  # Per-fleet MinIO identities (shared/storage-policies.ts), made with the profile's root keys
  # through MinIO's admin API: the gateways may not set the bucket lifecycle, the reconciler's
  # fleet alone may. Their secrets stay in $STATE/s3-identities.
  (cd "$app" && env -i PATH="$PATH" HOME="$HOME" S3_ENDPOINT="$S3_ENDPOINT" S3_ACCESS_KEY="$S3_ACCESS_KEY" S3_SECRET_KEY="$S3_SECRET_KEY" \
    S3_BUCKET="$S3_BUCKET" node dist/scripts/minio-identities.js "$STATE/s3-identities" >"$STATE/logs/s3-identities.log" 2>&1) \
    || die "could not make the per-fleet MinIO identities (see $STATE/logs/s3-identities.log)"
  # The seed writes the catalog's media (`catalog/`), which no fleet's identity may: as the owner.
  (cd "$app" && env -i "${common[@]}" DATABASE_URL="$DATABASE_URL" S3_ACCESS_KEY="$S3_ACCESS_KEY" S3_SECRET_KEY="$S3_SECRET_KEY" \
    node dist/admin/main.js seed >"$STATE/logs/seed.log" 2>&1) \
    || die "seeding the catalog failed (see $STATE/logs/seed.log)"

  local started=() urls=()
  for name in "${PROD_GATEWAYS[@]}"; do
    [[ -f $STATE/$name.port ]] || free_port >"$STATE/$name.port"
    port=$(cat "$STATE/$name.port")
    if pid_alive "$STATE/$name.pid" && gateway_ready "$port"; then
      log "$name: reusing the running gateway on port $port"
    else
      stop_pidfile "$STATE/$name.pid"
      mapfile -t own_env < <(role_env gateway; fleet_env gateway)
      env -i "${common[@]}" HOST=127.0.0.1 PORT="$port" API_METRICS_PORT=0 PUBLIC_BASE_URL="http://127.0.0.1:$port" \
        "${own_env[@]}" setsid node --enable-source-maps "$app/dist/api/server.js" >"$STATE/logs/$name.log" 2>&1 </dev/null 9>&- &
      echo $! >"$STATE/$name.pid"
      started+=("$name")
    fi
    urls+=("http://127.0.0.1:$port")
  done
  # The codec server: the Web UI (its origin only) and the `temporal` CLI get decoded payloads from
  # it, with the operator token (docs/operations/temporal-ui.md). It reads the keys, no database.
  local codec_port ui_port
  codec_port=$(cat "$STATE/codec-server.port")
  ui_port=$(sed -n 's/^TEMPORAL_UI_PORT=//p' "$STATE/temporal-ports.env" 2>/dev/null || true)
  if pid_alive "$STATE/codec-server.pid" && codec_ready "$codec_port"; then
    log "codec-server: reusing the running codec server on port $codec_port"
  else
    stop_pidfile "$STATE/codec-server.pid"
    env -i PATH="$PATH" HOME="$HOME" NODE_ENV=production LOG_LEVEL=info HOST=127.0.0.1 CODEC_SERVER_PORT="$codec_port" \
      PAYLOAD_CODEC_KEYS_FILE="$STATE/payload-codec.keys" PAYLOAD_CODEC_KEY_ID="$(cat "$STATE/payload-codec.active")" \
      CODEC_SERVER_TOKEN_FILE="$STATE/codec-server.token" CODEC_SERVER_CORS_ORIGINS="${ui_port:+http://127.0.0.1:$ui_port}" \
      setsid node --enable-source-maps "$app/dist/codec/server.js" >"$STATE/logs/codec-server.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/codec-server.pid"
    started+=(codec-server)
  fi
  # One Worker Deployment Version per build: a new build promotes itself once its fleets all poll
  # (never an old one again), and a superseded build's workers exit once it drained (checked every
  # 5 s here: the profile's Temporal server reports drainage within about 40 s, see
  # temporal-dynamicconfig.yaml).
  # The media sandbox (docs/operations/media-sandbox.md) is required where it can be made (the
  # profile runs as root in tests and CI); a developer's non-root profile runs it degraded, as said
  # in each worker's log.
  local sandbox=auto
  [[ $(id -u) == 0 ]] && sandbox=required
  local worker_env=("${common[@]}" WORKER_SHUTDOWN_GRACE_MS=20000 WORKER_DEPLOYMENT_NAME=mediagen
    WORKER_DEPLOYMENT_PROMOTE=newer WORKER_DRAIN_CHECK_MS=5000 MEDIA_SANDBOX="$sandbox")
  # The cluster profile routes the workers' Temporal traffic through its latency fault's proxy.
  [[ -n ${WORKER_TEMPORAL_ADDRESS:-} ]] && worker_env+=(TEMPORAL_ADDRESS="$WORKER_TEMPORAL_ADDRESS")
  local other
  for other in "$STATE"/builds/*/; do
    other=${other%/}
    [[ $other == "$dir" || ! -d $other ]] && continue
    if build_drained "$other"; then
      build_alive "$other" && continue   # its other workers are stopping by themselves
      log "build ${other##*/}: drained, its workers stopped by themselves: removing it"
      rm -rf "$other"
      continue
    fi
    # Not drained: its jobs still need its workers (a crashed one comes back, as for the new build).
    for name in "${PROD_WORKERS[@]}"; do
      if pid_alive "$other/$name.pid"; then continue; fi
      start_worker "$other" "$name" "${worker_env[@]}"
      log "$name of build ${other##*/} (not drained yet): started again (pid $(cat "$other/$name.pid"))"
    done
  done
  for name in "${PROD_WORKERS[@]}"; do
    if pid_alive "$dir/$name.pid" && worker_ready "$dir/logs/$name.log"; then
      log "$name: reusing the running worker (pid $(cat "$dir/$name.pid"), roles ${PROD_ROLES[$name]})"
    else
      start_worker "$dir" "$name" "${worker_env[@]}"
      started+=("$name")
    fi
    ln -sfn "$dir/$name.pid" "$STATE/$name.pid"
    ln -sfn "$dir/logs/$name.log" "$STATE/logs/$name.log"
  done
  for name in "${started[@]}"; do
    if [[ $name == codec-server ]]; then
      wait_for_process "$name" "$STATE/$name.pid" "$STATE/logs/$name.log" codec_ready "$codec_port"
    elif [[ $name == gateway-* ]]; then
      wait_for_process "$name" "$STATE/$name.pid" "$STATE/logs/$name.log" gateway_ready "$(cat "$STATE/$name.port")"
    else
      wait_for_process "$name" "$dir/$name.pid" "$dir/logs/$name.log" worker_ready "$dir/logs/$name.log"
    fi
    log "$name: started (pid $(cat "$STATE/$name.pid"))"
  done
  echo "export PROD_BUILD_ID='$build'"
  echo "export GATEWAY_URLS='${urls[*]}'"
  echo "export STACK_STATE_DIR='$STATE'"
  # The processes' key of the job media prefixes: a suite's own workers and storage clients must
  # find the profile's job media where its processes put it.
  echo "export S3_MEDIA_PREFIX_SECRET='$(cat "$STATE/s3-media-prefix.secret")'"
  # The keys' and the token's files (paths, not secrets): a suite's client opens payloads with them.
  echo "export PAYLOAD_CODEC_KEYS_FILE='$STATE/payload-codec.keys'"
  echo "export PAYLOAD_CODEC_KEY_ID='$(cat "$STATE/payload-codec.active")'"
  echo "export CODEC_SERVER_URL='http://127.0.0.1:$codec_port'"
  echo "export CODEC_SERVER_TOKEN_FILE='$STATE/codec-server.token'"
}

down_prod_extras() {
  stop_apps
  stop_pidfile "$STATE/temporal-ui.pid"
}
