#!/usr/bin/env bash
# Rainbow deploy of the docker compose topology (docker-compose.yml): the new build runs beside the
# running one and no job in flight is stranded.
#
#   scripts/deploy-compose.sh           build the image from this checkout and deploy it
#   scripts/deploy-compose.sh --prune   only remove the compose projects of builds that drained
#
# 1. builds the image (media-gen:local) and tags it media-gen:<build id> (its dist/build-id);
# 2. brings the infrastructure, the migrations and the two gateways up to date in the main project
#    (the gateways are stateless: replaced);
# 3. starts the new build's worker services as compose project mediagen-<build id>, on the main
#    project's network, with MEDIAGEN_BUILD_ID=<build id> and the default promotion policy
#    (`newer`): the build becomes the current version once its workers poll every task queue;
# 4. leaves the previous builds' workers running: they finish the jobs pinned to them and exit 0
#    once the Temporal server reports their build drained (WORKER_DRAIN_CHECK_MS), and restart:
#    on-failure leaves them stopped. `--prune` (or the next deploy) removes their stopped projects.
#
# Watch it: `temporal worker deployment describe --name mediagen` (the old build goes draining,
# then drained) or `docker compose run --rm migrate node dist/admin/main.js deployment status`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

project=${COMPOSE_PROJECT_NAME:-$(basename "$PWD")}
mapfile -t workers < <(awk '!/^#/ && $2 == "worker" { print $1 }' scripts/prod/processes)

prune() { # remove the projects of builds whose workers all exited 0 (drained)
  local p running failed
  for p in $(docker compose ls -a --format json | python3 -c 'import json, sys; print("\n".join(x["Name"] for x in json.load(sys.stdin)))' | grep "^$project-build-" || true); do
    running=$(docker compose -p "$p" ps -q --status running | wc -l)
    failed=$(docker compose -p "$p" ps -a --format '{{.ExitCode}}' | grep -vc '^0$' || true)
    if ((running == 0 && failed == 0)); then
      echo "[deploy] $p drained and stopped: removing its containers" >&2
      docker compose -p "$p" down
    fi
  done
}

if [[ ${1:-} == --prune ]]; then prune; exit 0; fi

docker compose build migrate
build=$(docker run --rm --entrypoint cat media-gen:local dist/build-id)
[[ $build =~ ^[A-Za-z0-9._-]+$ ]] || { echo "[deploy] the image has no build id" >&2; exit 1; }
docker tag media-gen:local "media-gen:$build"
echo "[deploy] build $build" >&2

# Infrastructure, migrations and gateways: the main project, without its worker services.
mapfile -t others < <(docker compose config --services | grep -vxF -f <(printf '%s\n' "${workers[@]}"))
docker compose up -d --no-build "${others[@]}"

# The new build's workers, beside every running build's.
MEDIAGEN_IMAGE="media-gen:$build" MEDIAGEN_BUILD_ID="$build" \
  docker compose -p "$project-build-$build" up -d --no-build --no-deps "${workers[@]}"
echo "[deploy] build $build's workers started: it becomes current once they poll every queue; earlier builds' workers stop once drained" >&2
prune
