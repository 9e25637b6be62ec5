#!/usr/bin/env bash
# npm run bench:cluster-status [-- seconds-per-phase=30]
# scripts/bench/cluster-status.ts on the cluster profile (started or reused here): status polls
# through a Temporal history-host kill and a Postgres failover; prints the error count and the
# longest gap. The profile comes back whole at the end (`up cluster`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/npm-deps.sh
ensure_npm_deps
npm run --silent build:all
CLUSTER_STACK_ENV=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET scripts/stack.sh up cluster)
export CLUSTER_STACK_ENV
NODE_ENV=test node dist/scripts/bench/cluster-status.js "$@"
