import type { ColumnType, Selectable } from 'kysely';

export type AuditActorKind = 'management_key' | 'user' | 'admin_cli';

/** keys.audit_log: append-only (a trigger refuses UPDATE, DELETE and TRUNCATE). */
export interface AuditLogTable {
  /** bigserial: Postgres returns it as a decimal string. */
  id: ColumnType<string, never, never>;
  at: ColumnType<Date, never, never>;
  account_id: string;
  actor_kind: AuditActorKind;
  /** The management key's id, the dashboard user's id; null for the admin CLI. */
  actor_id: string | null;
  client_address: string | null;
  /** `key.create`, `key.update`, `key.revoke`. */
  action: string;
  target_kind: string;
  target_id: string;
  before: ColumnType<unknown, string | null, never> | null;
  after: ColumnType<unknown, string | null, never> | null;
}

export type AuditRow = Selectable<AuditLogTable>;
