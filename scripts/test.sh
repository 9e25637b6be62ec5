#!/usr/bin/env bash
# npm test: provision the real stack (profile "test"), build, then run every test file with node's
# test runner. Pass name patterns to run a subset: npm test -- uploads gateway
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A fresh clone has no node_modules: install before spending minutes on the stack.
source scripts/npm-deps.sh
ensure_npm_deps
stack_env=$(scripts/stack.sh up test) || { echo "the test stack did not start (see the messages above)" >&2; exit 1; }
eval "$stack_env"
# A clean dist/: a test file deleted or renamed in the source must stop running.
rm -rf dist
if ! npm run --silent build; then
  # While several people edit at once, ALLOW_TYPE_ERRORS=1 runs what tsc still emitted. Never in CI.
  [[ ${ALLOW_TYPE_ERRORS:-0} == 1 && -z ${CI:-} ]] || exit 1
  echo "[test] type errors ignored (ALLOW_TYPE_ERRORS=1)" >&2
fi
mapfile -t files < <(find dist/test -name '*.test.js' | sort)
if (($#)); then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E "$(IFS='|'; echo "$*")" || true)
  ((${#files[@]})) || { echo "no test file matches: $*" >&2; exit 1; }
fi
export NODE_ENV=test
exec node --enable-source-maps --test --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout="${TEST_TIMEOUT_MS:-300000}" "${files[@]}"
