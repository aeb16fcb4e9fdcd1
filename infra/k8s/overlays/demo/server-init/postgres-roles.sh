#!/bin/sh
# Demo PostgreSQL, first start (/docker-entrypoint-initdb.d): a login role per service owning its
# own schema, nothing on the others (infra/credentials/policy.mjs; docs/operations.md "Security").
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
revoke create on schema public from public;
create role tollgate_keys login password '${KEYS_DB_PASSWORD}';
create role tollgate_billing login password '${BILLING_DB_PASSWORD}';
create role tollgate_dashboard login password '${DASHBOARD_DB_PASSWORD}';
create schema keys authorization tollgate_keys;
create schema billing authorization tollgate_billing;
create schema dashboard authorization tollgate_dashboard;
revoke all on schema keys, billing, dashboard from public;
SQL
