#!/usr/bin/env bash
# npm run dev: from a fresh clone to a running service in one command.
#   installs npm dependencies when missing, starts (or reuses) the dev stack — Postgres, Temporal
#   with its Web UI, MinIO — builds, migrates, seeds the catalog and the demo workspace, starts the
#   gateway and one worker (all roles), waits until /readyz answers, prints what you need to call
#   the API, and stays in the foreground. Ctrl-C (or SIGTERM) stops the gateway, the worker and the
#   dev stack.
#
# Environment: PORT (default 8080, or a free port when 8080 is taken); DEV_TRACING=0 runs without
# the trace viewer (Phoenix) and tracing; DEV_KEEP_STACK=1 leaves the
# stack running on exit; DEV_SKIP_BUILD=1 uses the existing dist/; DEV_LOG_DIR (default: the dev
# profile's state directory) holds api.log and worker.log. DATABASE_URL / TEMPORAL_ADDRESS /
# S3_ENDPOINT (+ keys) reuse running services instead of starting them (see scripts/stack.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[dev] %s\n' "$*" >&2; }
die() { printf '[dev] error: %s\n' "$*" >&2; exit 1; }

API_PID=
WORKER_PID=
STACK_UP=0
STOPPING=0

stop_pid() { # stop_pid PID NAME — TERM, wait up to 35 s (the worker drains), then KILL
  local pid=$1 name=$2
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 350); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  log "$name did not stop in time; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local code=${1:-0}
  ((STOPPING)) && return
  STOPPING=1
  trap - INT TERM EXIT
  stop_pid "$API_PID" gateway
  stop_pid "$WORKER_PID" worker
  if ((STACK_UP)) && [[ ${DEV_KEEP_STACK:-0} != 1 ]]; then
    scripts/stack.sh down dev || true
  fi
  exit "$code"
}
trap 'cleanup 130' INT
trap 'cleanup 143' TERM
trap 'cleanup $?' EXIT

port_free() {
  python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" 2>/dev/null
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
json_field() { # json_field FILE a.b.c
  node -e 'const v=process.argv[2].split(".").reduce((o,k)=>o?.[k], JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"))); if (v === undefined || v === null) process.exit(1); console.log(v)' "$1" "$2"
}

# ---- dependencies and services
command -v node >/dev/null || die "Node.js and npm are required (the project installs the Node it runs on: package.json optionalDependencies)"
source scripts/npm-deps.sh
ensure_npm_deps || die "npm ci failed"
require_node_runtime

STACK_UP=1
stack_env=$(scripts/stack.sh up dev) || die "the dev stack did not start (see the messages above)"
eval "$stack_env"

# ---- build, migrate, seed
if [[ ${DEV_SKIP_BUILD:-0} != 1 ]]; then
  log "building"
  npm run --silent build >&2 || die "the build failed"
fi
node dist/admin/main.js migrate >&2 || die "migrations failed"
seed_out=$(mktemp)
log "seeding the catalog and the demo workspace"
node dist/admin/main.js seed --demo --json >"$seed_out" || { rm -f "$seed_out"; die "seeding failed"; }
DEMO_KEY=$(json_field "$seed_out" demo.api_key)
DEMO_PROJECT=$(json_field "$seed_out" demo.project_id)
DEMO_WORKSPACE=$(json_field "$seed_out" demo.workspace_id)
rm -f "$seed_out"

# ---- gateway and worker
PORT=${PORT:-8080}
if [[ $PORT != 0 ]] && ! port_free "$PORT"; then
  taken=$PORT
  PORT=$(free_port)
  log "port $taken is taken; using $PORT"
elif [[ $PORT == 0 ]]; then
  PORT=$(free_port)
fi
export PORT
# The gateway's metrics port (9464 by default) moves too when something else holds it: a second
# checkout's dev stack, or an exporter already on the machine.
if [[ -z ${API_METRICS_PORT:-} ]] && ! port_free 9464; then
  API_METRICS_PORT=$(free_port)
  log "metrics port 9464 is taken; the gateway serves /metrics on $API_METRICS_PORT"
  export API_METRICS_PORT
fi
export HOST=${HOST:-127.0.0.1}
BASE_URL="http://127.0.0.1:$PORT"
export PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-$BASE_URL}
export NODE_ENV=${NODE_ENV:-development}

LOG_DIR=${DEV_LOG_DIR:-${MEDIA_GEN_HOME:-/var/tmp/media-gen}/dev}
mkdir -p "$LOG_DIR"
# Each in its own session: Ctrl-C reaches only this script, which then stops them in order
# (the worker drains its in-flight tasks on SIGTERM). It polls as the Worker Deployment named after
# its task queue prefix (a deployment owns its queues), version = this build (dist/build-id), and
# makes that version current at start: the one dev worker replaces the last one, so its build takes
# the new jobs (jobs pinned to an earlier build wait for it).
WORKER_DEPLOYMENT_NAME=${WORKER_DEPLOYMENT_NAME:-${TASK_QUEUE_PREFIX:-media}} WORKER_DEPLOYMENT_PROMOTE=${WORKER_DEPLOYMENT_PROMOTE:-always} \
  setsid node --enable-source-maps dist/worker/main.js >"$LOG_DIR/worker.log" 2>&1 </dev/null &
WORKER_PID=$!
setsid node --enable-source-maps dist/api/server.js >"$LOG_DIR/api.log" 2>&1 </dev/null &
API_PID=$!

deadline=$((SECONDS + ${DEV_READY_SECONDS:-90}))
until curl -sf -o /dev/null "$BASE_URL/readyz"; do
  kill -0 "$API_PID" 2>/dev/null || { tail -n 20 "$LOG_DIR/api.log" >&2 || true; die "the gateway exited (log: $LOG_DIR/api.log)"; }
  kill -0 "$WORKER_PID" 2>/dev/null || { tail -n 20 "$LOG_DIR/worker.log" >&2 || true; die "the worker exited (log: $LOG_DIR/worker.log)"; }
  ((SECONDS < deadline)) || die "the gateway did not become ready at $BASE_URL/readyz (log: $LOG_DIR/api.log)"
  sleep 0.3
done

if [[ -n ${TRACE_VIEWER_URL:-} ]]; then
  TRACE_VIEWER_LINE="$TRACE_VIEWER_URL   (a job's trace: $TRACE_VIEWER_URL/redirects/traces/<X-Trace-Id header or the workflow memo's traceId>)"
elif [[ -n ${OTEL_EXPORTER_OTLP_ENDPOINT:-} ]]; then
  TRACE_VIEWER_LINE="(not known: spans go to OTEL_EXPORTER_OTLP_ENDPOINT $OTEL_EXPORTER_OTLP_ENDPOINT)"
else
  TRACE_VIEWER_LINE="(off: DEV_TRACING=0)"
fi
cat <<EOF

  Media generation API is running.

    Base URL          $BASE_URL/v1
    Demo API key      $DEMO_KEY
    Demo project id   $DEMO_PROJECT
    Demo workspace    $DEMO_WORKSPACE
    Console           $BASE_URL/console   (sign in with the demo API key)
    Temporal Web UI   ${TEMPORAL_UI_URL:-(not known: TEMPORAL_ADDRESS points at a server this script did not start)}
    Trace viewer      $TRACE_VIEWER_LINE
    Logs              $LOG_DIR/api.log, $LOG_DIR/worker.log

  Try:  curl -H "Authorization: Bearer $DEMO_KEY" $BASE_URL/v1/actors

  Ctrl-C stops the gateway, the worker and the dev stack.

EOF

# Stay in the foreground until a signal, or until the gateway or the worker exits on its own.
while kill -0 "$API_PID" 2>/dev/null && kill -0 "$WORKER_PID" 2>/dev/null; do
  wait -n "$API_PID" "$WORKER_PID" 2>/dev/null || true
done
kill -0 "$API_PID" 2>/dev/null || log "the gateway exited (log: $LOG_DIR/api.log)"
kill -0 "$WORKER_PID" 2>/dev/null || log "the worker exited (log: $LOG_DIR/worker.log)"
cleanup 1
