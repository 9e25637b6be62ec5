#!/usr/bin/env bash
# npm test: provision the real stack (profile "test"), build, then run every test file with node's
# test runner. Pass name patterns to run a subset: npm test -- uploads gateway; arguments starting
# with - go to node --test: npm test -- redact --test-name-pattern "api keys"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/test-build.sh
split_test_args "$@"
# A fresh clone has no node_modules: install before spending minutes on the stack.
source scripts/npm-deps.sh
ensure_npm_deps
stack_env=$(scripts/stack.sh up test) || { echo "the test stack did not start (see the messages above)" >&2; exit 1; }
eval "$stack_env"
incremental_build || exit 1
mapfile -t files < <(find dist/test -name '*.test.js' | sort)
if ((${#patterns[@]})); then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E "$(IFS='|'; echo "${patterns[*]}")" || true)
  ((${#files[@]})) || { echo "no test file matches: ${patterns[*]}" >&2; exit 1; }
fi
# The production topology (scripts/stack.sh up prod: Temporal server on Postgres, two gateways,
# worker fleets by role) is started or reused only when its suite runs; the suite gets the profile's
# own variables in PROD_STACK_ENV, apart from the test stack's. The first start on a fresh machine
# builds the Temporal server and UI from the Go module proxy (about 5 minutes, cached after).
if printf '%s\n' "${files[@]}" | grep -qE '/prod-profile[a-z-]*\.test\.js$'; then
  PROD_STACK_ENV=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET \
    scripts/stack.sh up prod) || { echo "the prod profile did not start (see the messages above)" >&2; exit 1; }
  export PROD_STACK_ENV
fi
export NODE_ENV=test
# Two lanes run side by side. The side lane runs its files one at a time: the prod-profile suites,
# which take turns on one stack under a lock (in the main lane a second one would hold a slot idle
# while it waits), and the suites that wait minutes on purpose (a 200 s provider call, a 150 s
# synthesis, a run left to reach its run timeout). The main lane runs everything else,
# TEST_CONCURRENCY files at a time. The side lane's report is printed after the main lane's, then
# the failures of both, so the end of the output names them.
side_re='/(prod-profile[a-z-]*|worker-restarts|long-synthesis|run-timeout-backstop)\.test\.js$'
mapfile -t side < <(printf '%s\n' "${files[@]}" | grep -E "$side_re" || true)
mapfile -t main < <(printf '%s\n' "${files[@]}" | grep -vE "$side_re" || true)
reports=$(mktemp -d)
run_lane() { # name concurrency files...
  local name=$1 concurrency=$2
  shift 2
  node --enable-source-maps --test --test-concurrency="$concurrency" --test-timeout="${TEST_TIMEOUT_MS:-1800000}" "${node_flags[@]}" "$@" \
    >"$reports/$name.tap" 2>&1 &
  echo $! >"$reports/$name.pid"
  wait $!
  echo $? >"$reports/$name.code"
}
stop_lanes() {
  for f in "$reports"/*.pid; do [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  exit 143
}
trap stop_lanes INT TERM
set +e
: >"$reports/main.tap"
: >"$reports/side.tap"
((${#side[@]})) && run_lane side 1 "${side[@]}" &
side_pid=$!
((${#main[@]})) && run_lane main "${TEST_CONCURRENCY:-2}" "${main[@]}" &
main_pid=$!
# The main lane's report as it runs (the side lane's alone when the main lane has no file).
if ((${#main[@]})); then tail -n +1 --pid=$main_pid -f "$reports/main.tap"; else tail -n +1 --pid=$side_pid -f "$reports/side.tap"; fi
wait
((${#main[@]} && ${#side[@]})) && cat "$reports/side.tap"
code=0
echo "[test] summary"
for lane in main side; do
  [[ -f $reports/$lane.code ]] || continue
  totals=$(grep -E '^# (tests|pass|fail) ' "$reports/$lane.tap" | awk '{printf "%s %s  ", $2, $3}')
  echo "[test]   $lane lane ($(grep -cE '^(ok|not ok) ' "$reports/$lane.tap") top-level): ${totals:-no totals}exit $(cat "$reports/$lane.code")"
  grep -E '^ *not ok ' "$reports/$lane.tap" | sed 's/^/[test]     /'
  (($(cat "$reports/$lane.code") == 0)) || code=1
done
rm -rf "$reports"
# The stacks stay up so the next run starts in seconds; say so, and how to get the memory back.
running=()
for p in test prod dev; do [[ -f ${MEDIA_GEN_HOME:-/var/tmp/media-gen}/$p/stack.env ]] && running+=("$p"); done
if ((${#running[@]})); then
  names="${running[*]}"
  echo "[test] left running so the next run starts in seconds: the ${names// / and } stack(s), about 1.5 GB with prod. Stop everything: npm run stack -- down all" >&2
fi
exit $code
