#!/bin/sh
# Demo RabbitMQ, after start (postStart): a user per service with its permissions on the names of
# AMQP_PREFIX=tollgate (infra/credentials/policy.mjs; docs/operations.md "Security"). Idempotent.
set -eu
rabbitmqctl --timeout 300 await_startup >/dev/null
user() { # name password configure write read
  rabbitmqctl add_user "$1" "$2" >/dev/null 2>&1 || rabbitmqctl change_password "$1" "$2" >/dev/null
  rabbitmqctl set_permissions -p / "$1" "$3" "$4" "$5" >/dev/null
}
usage='^tollgate\.usage$'
billing='^tollgate\.(usage|usage\.dlx|billing\.usage|billing\.usage\.p[0-9]+|billing\.usage\.dead)$'
user tollgate-proxy "$PROXY_AMQP_PASSWORD" "$usage" "$usage" '^$'
user tollgate-billing "$BILLING_AMQP_PASSWORD" "$billing" "$billing" "$billing"
