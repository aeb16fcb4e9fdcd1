#!/usr/bin/env bash
# Stops the servers infra/dev/ensure-servers.sh started with Docker (and only those), then forgets
# them. Called by `make dev` on Ctrl-C; does nothing when ensure-servers started nothing.
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
state="${TOLLGATE_DEV_STATE:-$root/.dev-state/docker-servers}"
[ -s "$state" ] || exit 0
mapfile -t started <"$state"
echo "stop-servers: stopping ${started[*]} (started with Docker by make dev)"
export SERVICE_JWT_SECRET="${SERVICE_JWT_SECRET:-unused-by-the-dev-servers-0123456789abcdef}"
docker compose -p tollgate-dev -f "$root/docker-compose.yml" -f "$root/infra/dev/compose.dev-servers.yml" \
  stop "${started[@]}" && rm -f "$state"
