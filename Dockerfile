# syntax=docker/dockerfile:1
# Tollgate — one image recipe for every service (docs/operations.md "Images"). Build from the
# repository root (the image needs the workspace packages), naming the service:
#   docker build --build-arg SERVICE=keys -t tollgate/keys .
# SERVICE is one of proxy, keys, billing, dashboard, provider-sim (services/<SERVICE>). Each service
# migrates its own Postgres schema on start (keys, billing, dashboard). Run: configuration only
# through environment variables (services/<SERVICE>/README.md and services/<SERVICE>/src/config.ts),
# e.g.
#   docker run --rm -p 8081:8081 -e DATABASE_URL=... -e REDIS_URL=... -e BILLING_URL=... tollgate/keys
# The keys image also carries the admin CLI: `docker compose exec keys node dist/cli.js --help`.
ARG NODE_IMAGE=node:24-bookworm-slim
# No default: a build without --build-arg SERVICE=<name> fails at its first FROM.
ARG SERVICE

# ---- builder: compile (esbuild bundle, workspace packages included), then exactly the production deps ----
FROM ${NODE_IMAGE} AS builder
ARG SERVICE
ARG PNPM_VERSION=12.21.0
RUN npm install --global --no-fund --no-audit pnpm@${PNPM_VERSION}
WORKDIR /repo
# Lockfile first: the package download layer is reused until the lockfile changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc package.json ./
RUN pnpm fetch
COPY packages ./packages
COPY services ./services
COPY infra/build ./infra/build
# The build needs the dev dependencies (esbuild, vite); only the bundle and production deps reach the
# runtime. A service with a web UI (the dashboard: `build:ui`) builds it too.
RUN test -f services/${SERVICE}/package.json \
 && pnpm install --offline --frozen-lockfile --ignore-scripts --filter @tollgate/${SERVICE}... \
 && pnpm --filter @tollgate/${SERVICE} build \
 && pnpm --filter @tollgate/${SERVICE} run --if-present build:ui
# A self-contained directory: package.json, the production node_modules (no tsx, no esbuild) and dist/
# (and the built web UI where there is one).
RUN pnpm --filter @tollgate/${SERVICE} deploy --prod --legacy /out \
 && rm -rf /out/dist /out/src && cp -r services/${SERVICE}/dist /out/dist \
 && if [ -d services/${SERVICE}/ui/dist ]; then rm -rf /out/ui/dist && cp -r services/${SERVICE}/ui/dist /out/ui/dist; fi

# ---- the runtime's base: node 24, no build tools, no pnpm, no TypeScript sources ----
FROM ${NODE_IMAGE} AS base
ENV NODE_ENV=production \
    HOST=0.0.0.0
WORKDIR /app

# ---- what differs between the services: their port and, for the proxy, its state and memory ----
FROM base AS service-keys
ENV PORT=8081
EXPOSE 8081

FROM base AS service-billing
ENV PORT=8082
EXPOSE 8082

FROM base AS service-dashboard
ENV PORT=8083
EXPOSE 8083

FROM base AS service-provider-sim
ENV PORT=8090
EXPOSE 8090

FROM base AS service-proxy
# Memory settings (services/proxy/src/runtime.ts; docs/operations.md "Proxy memory"): 32 MB V8
# semi-spaces and two malloc arenas, for every node process of the container (cluster workers inherit
# both). A NODE_OPTIONS of your own replaces this one: keep --max-semi-space-size=32 in it.
# The image carries the repository catalogs under /app/catalog (CATALOG_PATH defaults to the dev one,
# whose models are served by provider-sim at PROVIDER_SIM_URL); mount your own and set CATALOG_PATH.
ENV PORT=8080 \
    STATE_DIR=/var/lib/tollgate \
    CATALOG_PATH=/app/catalog/dev.yaml \
    NODE_OPTIONS=--max-semi-space-size=32 \
    MALLOC_ARENA_MAX=2
COPY infra/catalog ./catalog
# The state directory (the usage spool, in its private per-instance subdirectory): the service user's
# alone. Mount a volume here (or at SPOOL_DIR) so the spool outlives the container.
RUN mkdir -p /var/lib/tollgate && chown node:node /var/lib/tollgate && chmod 0700 /var/lib/tollgate
EXPOSE 8080

# ---- runtime: the service's stage above plus its bundle, non-root ----
FROM service-${SERVICE} AS runtime
# Owned by root and read-only for the service user.
COPY --from=builder /out ./
USER node
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM reaches node directly (exec form): the service drains and exits.
CMD ["node", "dist/main.js"]
