#!/usr/bin/env bash
# Makes PostgreSQL, Redis and RabbitMQ answer on 127.0.0.1 for `make dev` / `make test`:
#   1. a server that already answers is left alone;
#   2. one installed locally (Debian/Ubuntu packages, as on CI) is started;
#   3. otherwise, with Docker, the missing ones are started from the repo's docker-compose.yml (only
#      those servers, project `tollgate-dev`, ports published by infra/dev/compose.dev-servers.yml) and
#      recorded in $TOLLGATE_DEV_STATE so `make dev` stops them on Ctrl-C (infra/dev/stop-servers.sh);
#   4. with neither, one screen says what to install.
# Ports: TOLLGATE_PG_PORT, TOLLGATE_REDIS_PORT, TOLLGATE_AMQP_PORT (defaults 5432, 6379, 5672).
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
pg_port="${TOLLGATE_PG_PORT:-5432}"
redis_port="${TOLLGATE_REDIS_PORT:-6379}"
amqp_port="${TOLLGATE_AMQP_PORT:-5672}"
state="${TOLLGATE_DEV_STATE:-$root/.dev-state/docker-servers}"
wait_scale="${TOLLGATE_SERVER_WAIT:-1}" # multiplies every wait (tests use 0 for "do not wait")

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() { # port name seconds
  local i
  for ((i = 0; i <= $3 * wait_scale; i++)); do up "$1" && return 0; sleep 1; done
  echo "ensure-servers: $2 is not answering on 127.0.0.1:$1" >&2
  return 1
}
have() { command -v "$1" >/dev/null 2>&1; }

missing=()
status=0
if ! up "$pg_port"; then
  if have pg_ctlcluster && [ -d /etc/postgresql ]; then
    echo "ensure-servers: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    wait_for "$pg_port" PostgreSQL 30 || status=1
  else
    missing+=(postgres)
  fi
fi
if ! up "$redis_port"; then
  if have redis-server; then
    echo "ensure-servers: starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no || true
    wait_for "$redis_port" Redis 30 || status=1
  else
    missing+=(redis)
  fi
fi
if ! up "$amqp_port"; then
  if have rabbitmq-server; then
    echo "ensure-servers: starting RabbitMQ"
    rabbitmq-server -detached || true
    wait_for "$amqp_port" RabbitMQ 90 || status=1
  else
    missing+=(rabbitmq)
  fi
fi
[ ${#missing[@]} -eq 0 ] && exit $status

if have docker && docker compose version >/dev/null 2>&1; then
  echo "ensure-servers: starting ${missing[*]} with Docker (docker-compose.yml, project tollgate-dev)"
  compose=(compose -p tollgate-dev -f "$root/docker-compose.yml" -f "$root/infra/dev/compose.dev-servers.yml")
  # The stack's required secret is not used by these three servers, but compose interpolates the file.
  export SERVICE_JWT_SECRET="${SERVICE_JWT_SECRET:-unused-by-the-dev-servers-0123456789abcdef}"
  export TOLLGATE_PG_PORT="$pg_port" TOLLGATE_REDIS_PORT="$redis_port" TOLLGATE_AMQP_PORT="$amqp_port"
  if ! docker "${compose[@]}" up -d --wait "${missing[@]}"; then
    echo "ensure-servers: docker compose could not start ${missing[*]}" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$state")"
  printf '%s\n' "${missing[@]}" >"$state"
  for name in "${missing[@]}"; do
    case "$name" in
      postgres) wait_for "$pg_port" PostgreSQL 60 || status=1 ;;
      redis) wait_for "$redis_port" Redis 30 || status=1 ;;
      rabbitmq) wait_for "$amqp_port" RabbitMQ 90 || status=1 ;;
    esac
  done
  exit $status
fi

cat >&2 <<HELP
Tollgate needs PostgreSQL 16, Redis 7 and RabbitMQ 3.13 on 127.0.0.1 (not answering: ${missing[*]}).
Install them, or install Docker and run make dev again (it then starts them from docker-compose.yml).

  Debian / Ubuntu
    sudo apt-get install postgresql redis-server rabbitmq-server
    sudo -u postgres psql -c "alter user postgres password null"   # trust for local dev, or set DATABASE_URL

  macOS (Homebrew)
    brew install postgresql@16 redis rabbitmq
    brew services start postgresql@16 && brew services start redis && brew services start rabbitmq
    createuser -s postgres

  Docker (any platform): https://docs.docker.com/get-docker/ — Docker Desktop, or on Linux the
    docker-ce + docker-compose-plugin packages; then \`make dev\` starts the three servers itself.

Other addresses: set DATABASE_URL, REDIS_URL and AMQP_URL (see docs/configuration.md).
HELP
exit 1
