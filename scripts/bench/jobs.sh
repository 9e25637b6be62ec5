#!/usr/bin/env bash
# npm run bench:jobs [-- JOBS_AT_CONCURRENCY_10 JOBS_AT_CONCURRENCY_1]
#
# scripts/bench/jobs.ts once per profile, each a comparison within one run of our job pipeline and a
# raw 6-no-op-activity workflow on the same server:
#   dev   the Temporal dev server on its SQLite file (WAL, synchronous=normal), as `npm run dev` runs it
#   prod  Temporal's own server on Postgres, as scripts/stack.sh up prod runs it
# Each profile is started or reused with scripts/stack.sh. The benchmark makes its own database,
# task queues and tenant, so a running dev or prod stack keeps its data (the dev server's history
# gains the benchmark's workflows, under their own task queues).
#   BENCH_PROFILES="dev"   only some profiles (default: "dev prod")
#   BENCH_TRACING=1        trace our side as the dev profile would (default: off). The raw side is
#                          never traced, and the issue's figures are taken with tracing off: a traced
#                          run compares a traced job with an untraced workflow, and the dev profile's
#                          trace viewer shares the machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/npm-deps.sh
ensure_npm_deps
npm run --silent build:all
for profile in ${BENCH_PROFILES:-dev prod}; do
  echo "== profile $profile"
  # The profile's own servers, whatever this shell's variables point at.
  stack_env=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET -u OTEL_EXPORTER_OTLP_ENDPOINT \
    DEV_TRACING="${BENCH_TRACING:-0}" scripts/stack.sh up "$profile")
  (
    unset OTEL_EXPORTER_OTLP_ENDPOINT
    eval "$stack_env"
    node dist/scripts/bench/jobs.js "$@"
  )
done
