#!/usr/bin/env bash
# Starts the local PostgreSQL, Redis and RabbitMQ if they are not answering (machines like CI's have
# them installed from Debian's packages). Does nothing for a server that already answers.
set -u
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() { # port name seconds
  for _ in $(seq 1 "$3"); do up "$1" && return 0; sleep 1; done
  echo "ensure-servers: $2 is not answering on 127.0.0.1:$1" >&2; return 1
}
status=0
if ! up 5432; then
  echo "ensure-servers: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  wait_for 5432 PostgreSQL 30 || status=1
fi
if ! up 6379; then
  echo "ensure-servers: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  wait_for 6379 Redis 30 || status=1
fi
if ! up 5672; then
  echo "ensure-servers: starting RabbitMQ"
  rabbitmq-server -detached || true
  wait_for 5672 RabbitMQ 90 || status=1
fi
exit $status
