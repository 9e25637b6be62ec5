#!/usr/bin/env bash
# npm run bench:capacity-cluster [-- jobs=20 idle=30]
# scripts/bench/capacity-cluster.ts on the cluster profile (started or reused here): per completed
# job of each kind, Temporal actions and history events, Postgres statements, transactions and
# NOTIFYs (the app's database and Temporal's apart), CPU ms per process group; then the capacity
# model at 10× and 100× the measured rate. The profile comes back to its own settings at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/npm-deps.sh
ensure_npm_deps
npm run --silent build:all
CLUSTER_STACK_ENV=$(env -u DATABASE_URL -u TEMPORAL_ADDRESS -u S3_ENDPOINT -u S3_ACCESS_KEY -u S3_SECRET_KEY -u S3_BUCKET scripts/stack.sh up cluster)
export CLUSTER_STACK_ENV
NODE_ENV=test node dist/scripts/bench/capacity-cluster.js "$@"
