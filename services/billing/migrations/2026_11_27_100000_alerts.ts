import { type Kysely, sql } from 'kysely';

/**
 * Spend and credit alerts (issue 29): webhook endpoints per account (the signing secret encrypted,
 * never in plaintext), the alert outbox (one row per threshold per scope per period, written in the
 * transaction that commits the spend; the unique constraint makes a replay or a second worker a
 * no-op), one delivery per (alert, endpoint) with its retry schedule, and a log row per attempt.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table if not exists billing.webhook_endpoints (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null,
      url text not null,
      thresholds smallint[] not null default '{50,80,100}',
      low_credit numeric,
      secret_ciphertext bytea not null,
      enabled boolean not null default true,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`create index if not exists webhook_endpoints_account_idx on billing.webhook_endpoints (account_id)`.execute(
    db,
  );
  await sql`
    create table if not exists billing.alerts (
      id uuid primary key default gen_random_uuid(),
      account_id uuid not null,
      scope text not null check (scope in ('key', 'team', 'account', 'test')),
      scope_id uuid not null,
      period text not null,
      threshold text not null,
      payload jsonb not null,
      created_at timestamptz not null default now(),
      constraint alerts_once unique (scope, scope_id, period, threshold)
    )`.execute(db);
  await sql`
    create table if not exists billing.alert_deliveries (
      id bigserial primary key,
      alert_id uuid not null references billing.alerts (id) on delete cascade,
      endpoint_id uuid not null references billing.webhook_endpoints (id) on delete cascade,
      account_id uuid not null,
      status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      delivered_at timestamptz,
      created_at timestamptz not null default now(),
      constraint alert_deliveries_once unique (alert_id, endpoint_id)
    )`.execute(db);
  await sql`
    create index if not exists alert_deliveries_due_idx on billing.alert_deliveries (next_attempt_at)
    where status = 'pending'`.execute(db);
  await sql`
    create table if not exists billing.alert_delivery_attempts (
      id bigserial primary key,
      delivery_id bigint not null references billing.alert_deliveries (id) on delete cascade,
      endpoint_id uuid not null,
      account_id uuid not null,
      attempt integer not null,
      attempted_at timestamptz not null default now(),
      status_code integer,
      latency_ms integer not null,
      error text
    )`.execute(db);
  await sql`
    create index if not exists alert_delivery_attempts_endpoint_idx
    on billing.alert_delivery_attempts (endpoint_id, id desc)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['alert_delivery_attempts', 'alert_deliveries', 'alerts', 'webhook_endpoints']) {
    await sql`drop table if exists ${sql.table(`billing.${t}`)}`.execute(db);
  }
}
