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

function checkedSchema(schema: string): string {
  if (!/^[a-z_]+$/.test(schema)) throw new Error(`audit log: bad schema name ${schema}`);
  return schema;
}
const schemaRef = (schema: string) => sql.raw(checkedSchema(schema));

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

/** The filters every audit log takes (`auditQuery` of @tollgate/contracts, already validated). */
export interface AuditLogFilters {
  actor_kind?: AuditActorKind;
  actor_id?: string;
  action?: string;
  target_id?: string;
  /** ISO instants: entries at or after `since`, before `until`. */
  since?: string;
  until?: string;
  /** Entries with an id below this one (the next page of a newest-first listing). */
  before?: string;
  limit: number;
}

/** Who made a change: a management key (through the proxy), a dashboard user, or the admin CLI. */
export interface AuditActor {
  kind: AuditActorKind;
  /** The management key's id or the dashboard user's id; null for the admin CLI. */
  id: string | null;
  /** The client's address as the edge resolved it (TRUSTED_PROXIES); null for the admin CLI. */
  address: string | null;
}

/** One audited change: what was done to which target of the account, before and after. */
export interface AuditChange {
  accountId: string;
  action: string;
  target: { kind: string; id: string };
  before: object | null;
  after: object | null;
}

/**
 * Appends one entry to `<schema>.audit_log`; call it inside the transaction that commits the change.
 * The one writer of the three logs (keys, billing, dashboard).
 */
export async function appendAuditEntry<DB>(
  trx: Kysely<DB>,
  schema: string,
  actor: AuditActor,
  change: AuditChange,
): Promise<void> {
  const table = `${checkedSchema(schema)}.audit_log` as 'log';
  await (trx as unknown as Kysely<{ log: AuditLogTable }>)
    .insertInto(table)
    .values({
      account_id: change.accountId,
      actor_kind: actor.kind,
      actor_id: actor.id,
      client_address: actor.address,
      action: change.action,
      target_kind: change.target.kind,
      target_id: change.target.id,
      before: change.before ? JSON.stringify(change.before) : null,
      after: change.after ? JSON.stringify(change.after) : null,
    })
    .execute();
}

/** One entry as every API shows it (never the row's account). */
export interface AuditLogEntry {
  id: string;
  at: string;
  actor: { kind: AuditActorKind; id: string | null };
  client_address: string | null;
  action: string;
  target: { kind: string; id: string };
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/**
 * One page of an account's entries in `<schema>.audit_log` matching the filters, newest first;
 * `next_before` continues it (null: the last page). The one listing of the three logs.
 */
export async function listAuditLog<DB>(
  db: Kysely<DB>,
  schema: string,
  accountId: string,
  q: AuditLogFilters,
): Promise<{ data: AuditLogEntry[]; next_before: string | null }> {
  const table = `${checkedSchema(schema)}.audit_log` as 'log';
  const logDb = db as unknown as Kysely<{ log: AuditLogTable }>;
  let query = logDb.selectFrom(table).selectAll().where('account_id', '=', accountId);
  if (q.actor_kind) query = query.where('actor_kind', '=', q.actor_kind);
  if (q.actor_id) query = query.where('actor_id', '=', q.actor_id);
  if (q.action) query = query.where('action', '=', q.action);
  if (q.target_id) query = query.where('target_id', '=', q.target_id);
  if (q.since) query = query.where('at', '>=', new Date(q.since));
  if (q.until) query = query.where('at', '<', new Date(q.until));
  if (q.before) query = query.where('id', '<', q.before as never);
  const rows = await query.orderBy('id', 'desc').limit(q.limit).execute();
  return {
    data: rows.map((r) => ({
      id: r.id,
      at: r.at.toISOString(),
      actor: { kind: r.actor_kind, id: r.actor_id },
      client_address: r.client_address,
      action: r.action,
      target: { kind: r.target_kind, id: r.target_id },
      before: (r.before ?? null) as Record<string, unknown> | null,
      after: (r.after ?? null) as Record<string, unknown> | null,
    })),
    next_before: rows.length === q.limit ? (rows[rows.length - 1]?.id ?? null) : null,
  };
}
