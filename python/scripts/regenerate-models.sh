#!/usr/bin/env bash
# `npm run client:python-models`: rewrites python/src/mediagen/models.py from the OpenAPI document the
# gateway serves (built by the same function as GET /v1/openapi.json), with the pinned generator in
# the virtualenv scripts/stack.sh installs. The python-client-openapi test fails until this is run
# after a contract change.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# The virtualenv scripts/stack.sh makes: named by the hash of the pinned requirements.
CACHE_DIR=${MEDIA_GEN_CACHE:-$HOME/.cache/media-gen}
home="$CACHE_DIR/python-client-$(sha256sum python/requirements-dev.txt | cut -c1-12)"
[[ -f $home/.installed ]] || { echo "the Python client's tools are not installed: run scripts/stack.sh install" >&2; exit 1; }
npm run --silent build
doc=$(mktemp)
trap 'rm -f "$doc"' EXIT
node --input-type=module -e "
  const { allOperations, buildOpenApiDocument } = await import('$ROOT/dist/api/openapi.js');
  process.stdout.write(JSON.stringify(buildOpenApiDocument(allOperations())));
" >"$doc"
"$home/venv/bin/python" python/scripts/generate_models.py "$doc"
