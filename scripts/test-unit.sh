#!/usr/bin/env bash
# npm run test:unit: the tests that need no stack (no Postgres, shared Temporal server or MinIO) —
# test/unit/ and the workflow tests with mocked activities (they start their own Temporal dev server
# from the `temporal` CLI that scripts/stack.sh install puts on PATH). Builds into dist/ like npm test.
# Pass name patterns to run a subset: npm run test:unit -- ssrf pipeline (and node --test flags, as npm test)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/test-build.sh
split_test_args "$@"
source scripts/npm-deps.sh
ensure_npm_deps
require_node_runtime
incremental_build
command -v temporal >/dev/null || echo "[test:unit] the temporal CLI is not installed (scripts/stack.sh install): the mocked workflow tests will fail" >&2
mapfile -t files < <({ find dist/test/unit -name '*.test.js'; echo dist/test/workflows/job-generation-branches.test.js; } | sort)
if ((${#patterns[@]})); then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E "$(IFS='|'; echo "${patterns[*]}")" || true)
  ((${#files[@]})) || { echo "no unit test file matches: ${patterns[*]}" >&2; exit 1; }
fi
export NODE_ENV=test
exec node --enable-source-maps --test --test-reporter=spec --test-concurrency="${TEST_CONCURRENCY:-2}" --test-timeout="${TEST_TIMEOUT_MS:-120000}" "${node_flags[@]}" "${files[@]}"
