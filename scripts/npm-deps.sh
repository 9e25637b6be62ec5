#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/dev.sh: install npm dependencies when node_modules is
# missing or older than package-lock.json, so `npm test` / `npm run dev` work as the first command
# on a fresh clone. npm ci writes node_modules/.package-lock.json, so after an install (ours or CI's
# own `npm ci`) the check is one stat and nothing is redone.
ensure_npm_deps() {
  local stamp=node_modules/.package-lock.json
  if [[ -f $stamp && ! package-lock.json -nt $stamp ]]; then return 0; fi
  if [[ -d node_modules ]]; then
    echo "[deps] package-lock.json changed since the last install: npm ci" >&2
  else
    echo "[deps] installing npm dependencies (npm ci)" >&2
  fi
  npm ci --no-audit --no-fund >&2
}
