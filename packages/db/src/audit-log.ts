import { type ColumnType, type Kysely, sql } from 'kysely';

/** Who made an audited change: a management key, a dashboard user, or the admin CLI. */
export type AuditActorKind = 'management_key' | 'user' | 'admin_cli';

/**
 * `<schema>.audit_log`, the same shape in every service that owns one (keys, billing, dashboard):
 * append-only (a trigger refuses UPDATE, DELETE and TRUNCATE, whatever role connects).
 */
export interface AuditLogTable {
  /** bigserial: Postgres returns it as a decimal string. */
  id: ColumnType<string, never, never>;
  at: ColumnType<Date, never, never>;
  account_id: string;
  actor_kind: AuditActorKind;
  /** The management key's id, the dashboard user's id; null for the admin CLI. */
  actor_id: string | null;
  client_address: string | null;
  action: string;
  target_kind: string;
  target_id: string;
  before: ColumnType<unknown, string | null, never> | null;
  after: ColumnType<unknown, string | null, never> | null;
}

function schemaRef(schema: string) {
  if (!/^[a-z_]+$/.test(schema)) throw new Error(`audit log: bad schema name ${schema}`);
  return sql.raw(schema);
}

/** Creates `<schema>.audit_log`, its index and the append-only triggers (a service's migration). */
export async function createAuditLog(db: Kysely<unknown>, schema: string): Promise<void> {
  const s = schemaRef(schema);
  await sql`
    create table if not exists ${s}.audit_log (
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
  await sql`create index if not exists audit_log_account_at on ${s}.audit_log (account_id, at desc, id desc)`.execute(
    db,
  );
  await sql`
    create or replace function ${s}.audit_log_append_only() returns trigger language plpgsql as $$
    begin
      raise exception '${s}.audit_log is append-only';
    end $$`.execute(db);
  await sql`drop trigger if exists audit_log_no_change on ${s}.audit_log`.execute(db);
  await sql`
    create trigger audit_log_no_change before update or delete on ${s}.audit_log
      for each row execute function ${s}.audit_log_append_only()`.execute(db);
  await sql`drop trigger if exists audit_log_no_truncate on ${s}.audit_log`.execute(db);
  await sql`
    create trigger audit_log_no_truncate before truncate on ${s}.audit_log
      for each statement execute function ${s}.audit_log_append_only()`.execute(db);
}

/** Drops `<schema>.audit_log` and its trigger function (a migration's `down`). */
export async function dropAuditLog(db: Kysely<unknown>, schema: string): Promise<void> {
  const s = schemaRef(schema);
  await sql`drop table if exists ${s}.audit_log`.execute(db);
  await sql`drop function if exists ${s}.audit_log_append_only()`.execute(db);
}
