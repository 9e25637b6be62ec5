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
require_node_runtime
stack_env=$(scripts/stack.sh up test) || { echo "the test stack did not start (see the messages above)" >&2; exit 1; }
eval "$stack_env"
incremental_build || exit 1
# The cluster chaos suite (test/cluster/, `npm run test:cluster`) runs only when asked for by name:
# it takes the better part of an hour; its smoke (test/e2e/cluster-smoke.test.ts) is in every run.
mapfile -t files < <(find dist/test -name '*.test.js' | sort)
if ((${#patterns[@]})); then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E "$(IFS='|'; echo "${patterns[*]}")" || true)
  ((${#files[@]})) || { echo "no test file matches: ${patterns[*]}" >&2; exit 1; }
else
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '^dist/test/cluster/' || true)
fi
export NODE_ENV=test
# Three lanes run side by side. The side lane runs its files one at a time: first the suites that need
# the Go builds of Temporal's server and Web UI (and the cluster profile's Debian packages), which it
# installs itself (a file check once cached; on a bare machine about 6 minutes that the other lanes
# spend testing): the payload-codec suite, which runs the Web UI server against the test stack, then the
# prod-profile suites, which take turns on one stack under a lock (in the main lane a second one would
# hold a slot idle while it waits), then the cluster-profile suites, then two long suites (after_re).
# The waits lane runs, one at a time
# from the start, the suites that mostly wait (a 200 s provider call, a 150 s synthesis, a run left to
# reach its run timeout, worker processes killed or stopped and their successors awaited, webhook
# circuits' cool-downs) and the suites on Temporal's time-skipping test server (whose clock jumps only
# while the machine keeps up with it): about 25 minutes of timers, little CPU, which behind the side
# lane made it the whole run's critical path. The main lane runs everything else, TEST_CONCURRENCY files at a
# time. The other lanes' reports are printed after the main lane's, then each part's totals and
# failures, so the end of the output names what failed.
codec_re='/e2e/payload-codec\.test\.js$'
prod_re='/prod-profile[a-z-]*\.test\.js$'
cluster_re='/e2e/cluster-[a-z-]*\.test\.js$|^dist/test/cluster/'
wait_re='/(worker-restarts|long-synthesis|run-timeout-backstop|pipelines-recovery|fleets|control-fleet|webhook-circuits|promotion-memory|batches-recovery|deadline|webhook-abandon|db-outage|trace-viewer)\.test\.js$'
# Two long suites of the main lane's share run in the side lane once its profiles are done, beside the
# main lane's last files rather than among them (the side lane would otherwise idle for its last
# quarter of an hour): a thousand rounds of each hostile upload, and the contract fuzz, about five
# minutes each.
after_re='/e2e/(hostile-uploads|contract-fuzz)\.test\.js$'
mapfile -t codec < <(printf '%s\n' "${files[@]}" | grep -E "$codec_re" || true)
mapfile -t prod < <(printf '%s\n' "${files[@]}" | grep -E "$prod_re" || true)
mapfile -t waits < <(printf '%s\n' "${files[@]}" | grep -E "$wait_re" || true)
mapfile -t cluster < <(printf '%s\n' "${files[@]}" | grep -E "$cluster_re" || true)
mapfile -t after < <(printf '%s\n' "${files[@]}" | grep -E "$after_re" || true)
mapfile -t main < <(printf '%s\n' "${files[@]}" | grep -vE "$codec_re|$prod_re|$cluster_re|$wait_re|$after_re" || true)
# Only long waits or long suites asked for: they are the main lane, reported as they run.
if ((${#main[@]} == 0)); then
  main=("${waits[@]}" "${after[@]}")
  waits=() after=()
fi
reports=$(mktemp -d)
: >"$reports/main.tap"
: >"$reports/codec.tap"
: >"$reports/prod.tap"
: >"$reports/cluster.tap"
: >"$reports/after.tap"
: >"$reports/waits.tap"
run_files() { # part concurrency files...
  local part=$1 concurrency=$2
  shift 2
  node --enable-source-maps --test --test-reporter=tap --test-reporter-destination=stdout \
    --test-reporter="$PWD/dist/test/support/durations-reporter.js" --test-reporter-destination="$reports/$part.durations" \
    --test-concurrency="$concurrency" --test-timeout="${TEST_TIMEOUT_MS:-1800000}" "${node_flags[@]}" "$@" \
    >>"$reports/$part.tap" 2>&1 &
  echo $! >"$reports/$part.pid"
  wait $!
  echo $? >"$reports/$part.code"
}
# The production topology (scripts/stack.sh up prod: Temporal server on Postgres, two gateways,
# worker fleets by role) is started or reused only when its suites run; they get the profile's own
# variables in PROD_STACK_ENV, apart from the test stack's. The first start on a fresh machine builds
# the Temporal server and UI from the Go module proxy (about 5 minutes, cached after). Outside CI it
# stays up for the next run; in CI it stops once its suites are done, as its idle fleets would cost
# CPU for the rest of the run.
side_lane() {
  local need=''
  ((${#codec[@]} == 0)) || need=prod
  ((${#prod[@]} == 0)) || need=prod
  ((${#cluster[@]} == 0)) || need=all
  if [[ -n $need ]] && ! scripts/stack.sh install "$need" >>"$reports/codec.tap" 2>&1; then
    echo "the installs the payload-codec, prod-profile and cluster suites need failed (see the messages above)" >>"$reports/codec.tap"
    echo 1 >"$reports/codec.code"
    return
  fi
  ((${#codec[@]} == 0)) || run_files codec 1 "${codec[@]}"
  if ((${#prod[@]})); then
    if PROD_STACK_ENV=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET \
      scripts/stack.sh up prod 2>>"$reports/prod.tap"); then
      export PROD_STACK_ENV
      run_files prod 1 "${prod[@]}"
    else
      echo "the prod profile did not start (see the messages above)" >>"$reports/prod.tap"
      echo 1 >"$reports/prod.code"
    fi
    [[ -z ${CI:-} ]] || scripts/stack.sh down prod >>"$reports/prod.tap" 2>&1
  fi
  # The cluster profile (scripts/stack-cluster.sh) after the prod profile is down in CI, one file at
  # a time (its suites fault the one shared cluster), stopped in CI like the prod profile.
  if ((${#cluster[@]})); then
    if CLUSTER_STACK_ENV=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET \
      scripts/stack.sh up cluster 2>>"$reports/cluster.tap"); then
      export CLUSTER_STACK_ENV
      run_files cluster 1 "${cluster[@]}"
    else
      echo "the cluster profile did not start (see the messages above)" >>"$reports/cluster.tap"
      echo 1 >"$reports/cluster.code"
    fi
    [[ -z ${CI:-} ]] || scripts/stack.sh down cluster >>"$reports/cluster.tap" 2>&1
  fi
  ((${#after[@]} == 0)) || run_files after 1 "${after[@]}"
}
stop_parts() {
  kill -TERM "$side_pid" "$main_pid" "$waits_pid" 2>/dev/null
  for f in "$reports"/*.pid; do [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  exit 143
}
side_pid='' main_pid='' waits_pid=''
trap stop_parts INT TERM
set +e
side_lane &
side_pid=$!
if ((${#waits[@]})); then
  run_files waits 1 "${waits[@]}" &
  waits_pid=$!
fi
((${#main[@]} == 0)) || run_files main "${TEST_CONCURRENCY:-2}" "${main[@]}" &
main_pid=$!
# The main lane's report as it runs, the other lanes' after it (only side-lane suites asked for: all
# of them once they are done).
((${#main[@]} == 0)) || tail -n +1 --pid=$main_pid -f "$reports/main.tap"
wait
cat "$reports/codec.tap" "$reports/prod.tap" "$reports/cluster.tap" "$reports/after.tap" "$reports/waits.tap"
# Each failed test with where it failed and the first lines of its error (the TAP report prints them
# where they happen, thousands of lines above a CI log's tail).
failures() {
  awk '
    /^ *not ok / { line = $0; sub(/^ */, "", line); print "[test]     failed: " line; inside = 1; err = 0; next }
    inside && /^ *\.\.\.$/ { inside = 0; next }
    inside && /^ *location:/ { l = $0; sub(/^ *location: */, "", l); print "[test]       at " l; next }
    inside && /^ *error:/ { e = $0; sub(/^ *error: *(\|-)? */, "", e); err = 1; if (e != "") { print "[test]       " e; err = 2 } ; next }
    inside && err >= 1 && err <= 6 { if ($0 ~ /^ *[a-zA-Z_]+:( |$)/) { err = 7; next } t = $0; sub(/^ */, "", t); if (t != "") { print "[test]       " substr(t, 1, 400); err++ } }
  ' "$1"
}
# A part's slowest files (test/support/durations-reporter.ts): seconds from a file's first event to its
# last, and the sum of its top-level tests.
slowest() {
  [[ -s $1 ]] || return 0
  echo "[test]     slowest files (wall s, tests s):"
  sort -t$'\t' -k1,1nr "$1" | head -n "${TEST_SLOWEST:-8}" | awk -F'\t' '{ printf "[test]       %5d %5d  %s\n", $1, $2, $4 }'
}
code=0
echo "[test] summary"
for part in main codec prod cluster after waits; do
  [[ -f $reports/$part.code ]] || continue
  case $part in
    main) what="main lane" ;;
    codec) what="side lane, its installs and the payload-codec suite" ;;
    prod) what="side lane, prod-profile suites" ;;
    cluster) what="side lane, cluster-profile suites" ;;
    after) what="side lane, long suites after the profiles" ;;
    waits) what="waits lane" ;;
  esac
  totals=$(grep -E '^# (tests|pass|fail) ' "$reports/$part.tap" | awk '{printf ", %s %s", $2, $3}')
  echo "[test]   $what: exit $(cat "$reports/$part.code")$totals"
  failures "$reports/$part.tap"
  slowest "$reports/$part.durations"
  if (($(cat "$reports/$part.code") != 0)); then
    code=1
    # A lane that failed before any test failed (a stack that did not start): its last lines say why.
    grep -q '^ *not ok ' "$reports/$part.tap" || tail -n 8 "$reports/$part.tap" | cut -c1-400 | sed 's/^/[test]     /'
  fi
done
rm -rf "$reports"
# The stacks stay up so the next run starts in seconds; say so, and how to get the memory back.
running=()
for p in test prod cluster dev; do [[ -f ${MEDIA_GEN_HOME:-/var/tmp/media-gen}/$p/stack.env ]] && running+=("$p"); done
if ((${#running[@]})); then
  names="${running[*]}"
  echo "[test] left running so the next run starts in seconds: the ${names// / and } stack(s), about 1.5 GB with prod. Stop everything: npm run stack -- down all" >&2
fi
exit $code
