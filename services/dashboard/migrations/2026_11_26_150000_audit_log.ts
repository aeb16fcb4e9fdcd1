import { type Kysely, sql } from 'kysely';

/**
 * The audit log of dashboard user changes (append-only): who (a management key, a dashboard user or the admin
 * CLI), when, what, the record before and after, and the client's address. A trigger refuses UPDATE,
 * DELETE and TRUNCATE, whatever role the service connects with.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table if not exists dashboard.audit_log (
      id bigserial primary key,
      at timestamptz not null default now(),
      account_id uuid not null,
      actor_kind text not null check (actor_kind in ('management_key', 'user', 'admin_cli')),
      actor_id text,
      client_address text,
      action text not null,
      target_kind text not null,
      target_id text not null,
      before jsonb,
      after jsonb
    )`.execute(db);
  await sql`create index if not exists audit_log_account_at on dashboard.audit_log (account_id, at desc, id desc)`.execute(
    db,
  );
  await sql`
    create or replace function dashboard.audit_log_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'dashboard.audit_log is append-only';
    end $$`.execute(db);
  await sql`drop trigger if exists audit_log_no_change on dashboard.audit_log`.execute(db);
  await sql`
    create trigger audit_log_no_change before update or delete on dashboard.audit_log
      for each row execute function dashboard.audit_log_append_only()`.execute(db);
  await sql`drop trigger if exists audit_log_no_truncate on dashboard.audit_log`.execute(db);
  await sql`
    create trigger audit_log_no_truncate before truncate on dashboard.audit_log
      for each statement execute function dashboard.audit_log_append_only()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists dashboard.audit_log`.execute(db);
  await sql`drop function if exists dashboard.audit_log_append_only()`.execute(db);
}
