# Tollgate — the two commands a newcomer needs: `make dev` and `make test`.
SHELL := /bin/bash
PNPM_VERSION := 12.21.0
export PATH := $(CURDIR)/.tools/bin:$(CURDIR)/node_modules/.bin:$(PATH)

.PHONY: dev start build test test-faults install pnpm servers lint typecheck check demo migrate bench bench-proxy bench-scale clean

## Installs pnpm (if missing) and every dependency, Node 24 included (root devDependency `node`),
## then builds the dashboard's web UI (services/dashboard/ui/dist, served by the dashboard service).
install: pnpm
	@pnpm install --frozen-lockfile --reporter=append-only >/dev/null || pnpm install --frozen-lockfile
	@pnpm --filter @tollgate/dashboard build:ui >/dev/null || pnpm --filter @tollgate/dashboard build:ui

pnpm:
	@command -v pnpm >/dev/null 2>&1 || npm install -g pnpm@$(PNPM_VERSION) >/dev/null 2>&1 \
	  || npm install --prefix $(CURDIR)/.tools pnpm@$(PNPM_VERSION) >/dev/null
	@command -v pnpm >/dev/null 2>&1 || { mkdir -p .tools/bin && ln -sf ../node_modules/.bin/pnpm .tools/bin/pnpm; }

## Starts PostgreSQL, Redis and RabbitMQ if they are not running.
servers:
	@bash infra/dev/ensure-servers.sh

## Runs the whole gateway (provider-sim, keys, billing, proxy) against the local servers. Ctrl-C stops it.
dev: install servers
	@node --import tsx infra/dev/run.ts

## Compiles every service to services/<name>/dist (esbuild bundle; `node dist/main.js` runs it).
build: install
	@pnpm build

## Like `make dev` but runs the compiled production build (node dist/main.js, JSON logs). Ctrl-C stops it.
start: build servers
	@node --import tsx infra/dev/run.ts --dist

## Bootstraps a demo account with a management key, credits and an inference key (stack must be running).
demo: install
	@node --import tsx infra/dev/demo.ts

## Runs every test (unit + integration against real Postgres, Redis, RabbitMQ).
test: install servers
	@pnpm test

## The fault suite (tests/faults): the stack as processes through broker, database and process failures.
test-faults: install servers
	@pnpm exec vitest run --config tests/faults/vitest.config.ts

lint: install
	@pnpm lint

typecheck: install
	@pnpm typecheck

## Lint, typecheck and tests: what CI runs.
check: lint typecheck test

migrate: install
	@pnpm --filter @tollgate/keys migrate && pnpm --filter @tollgate/billing migrate && pnpm --filter @tollgate/dashboard migrate

## Tollgate (production build, whole stack) vs the upstream directly vs Portkey, one run (bench/compare.ts, ≈ 11 min).
bench: build servers
	@pnpm exec tsx bench/compare.ts

## Diagnostics: the proxy alone (reduced configuration) and the billing worker alone.
bench-proxy: install servers
	@pnpm exec tsx bench/proxy-latency.ts && pnpm exec tsx bench/billing-throughput.ts

## Scale-out: the stack on one Redis + 1 usage partition vs a local 3-master Redis Cluster + 2 (bench/scale.ts, ≈ 2 min).
bench-scale: install servers
	@pnpm exec tsx bench/scale.ts

clean:
	rm -rf node_modules packages/*/node_modules services/*/node_modules services/*/dist .tools .vitest-report.json
