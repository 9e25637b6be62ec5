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
set +e
node --enable-source-maps --test --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout="${TEST_TIMEOUT_MS:-1800000}" "${node_flags[@]}" "${files[@]}"
code=$?
# The stacks stay up so the next run starts in seconds; say so, and how to get the memory back.
running=()
for p in test prod dev; do [[ -f ${MEDIA_GEN_HOME:-/var/tmp/media-gen}/$p/stack.env ]] && running+=("$p"); done
if ((${#running[@]})); then
  names="${running[*]}"
  echo "[test] left running so the next run starts in seconds: the ${names// / and } stack(s), about 1.5 GB with prod. Stop everything: npm run stack -- down all" >&2
fi
exit $code
