import type { AuditLogTable } from '@tollgate/db';
import { createDb, migrateToLatest } from '@tollgate/db';
import type { ColumnType, Generated, Kysely, Selectable } from 'kysely';
import { migrations } from '../migrations';

/** Postgres schema owned by the dashboard. */
export const DASHBOARD_SCHEMA = 'dashboard';

export type Role = 'owner' | 'viewer';

interface UsersTable {
  id: Generated<string>;
  account_id: string;
  email: string;
  display_name: string;
  role: Role;
  /** scrypt (see auth/password.ts); null until the user accepted the invitation. */
  password_hash: string | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date | string>;
}

interface SessionsTable {
  /** SHA-256 of the cookie value (the cookie value itself is never stored). */
  digest: string;
  user_id: string;
  csrf_token: string;
  created_at: ColumnType<Date, Date | string, never>;
  expires_at: ColumnType<Date, Date | string, never>;
  /** Last request of the session (kept to the minute): the idle timeout counts from it. */
  last_seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

interface InvitesTable {
  digest: string;
  user_id: string;
  created_at: ColumnType<Date, Date | string, never>;
  expires_at: ColumnType<Date, Date | string, never>;
  used_at: ColumnType<Date | null, never, Date | string>;
}

interface SignInFailuresTable {
  /** `pair:<client address>|<lowercase email>` or `ip:<client address>` (auth/sign-in-throttle.ts). */
  subject: string;
  failures: number;
  window_started_at: ColumnType<Date, Date | string, Date | string>;
  /** No attempt of this subject before this instant (backoff); null while under the free attempts. */
  blocked_until: ColumnType<Date | null, Date | string | null, Date | string | null>;
}

export interface Database {
  'dashboard.users': UsersTable;
  'dashboard.sessions': SessionsTable;
  'dashboard.invites': InvitesTable;
  'dashboard.sign_in_failures': SignInFailuresTable;
  'dashboard.audit_log': AuditLogTable;
}

export type User = Selectable<UsersTable>;
export type DashboardDb = Kysely<Database>;

export const createDashboardDb = (url: string, options: { max?: number } = {}): DashboardDb =>
  createDb<Database>(url, options);

/** Idempotent; safe when several instances start at once. */
export const migrateDashboardDb = (db: DashboardDb) =>
  migrateToLatest(db as Kysely<unknown>, DASHBOARD_SCHEMA, migrations);
