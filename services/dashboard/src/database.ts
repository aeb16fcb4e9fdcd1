import type { AuditLogTable } from '@tollgate/db';
import { createDb, migrateToLatest } from '@tollgate/db';
import type { ColumnType, Generated, Kysely, Selectable } from 'kysely';
import { migrations } from '../migrations';

/** Postgres schema owned by the dashboard. */
export const DASHBOARD_SCHEMA = 'dashboard';

/** `member`: a team viewer (sees only the keys and usage of the teams they are a member of). */
export type Role = 'owner' | 'viewer' | 'member';

interface UsersTable {
  id: Generated<string>;
  account_id: string;
  email: string;
  display_name: string;
  role: Role;
  /** scrypt (see auth/password.ts); null until the user accepted the invitation. */
  password_hash: string | null;
  /** The identity provider's `sub` (single sign-on); null for users who never signed in through it. */
  sso_subject: ColumnType<string | null, string | null | undefined, string | null>;
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

interface SsoLoginsTable {
  /** SHA-256 of the browser's `tg_sso` cookie value. */
  digest: string;
  state: string;
  nonce: string;
  code_verifier: string;
  created_at: ColumnType<Date, Date | string, never>;
  expires_at: ColumnType<Date, Date | string, never>;
}

interface TeamMembersTable {
  team_id: string;
  user_id: string;
  account_id: string;
  created_at: ColumnType<Date, never, never>;
}

export interface Database {
  'dashboard.users': UsersTable;
  'dashboard.sessions': SessionsTable;
  'dashboard.invites': InvitesTable;
  'dashboard.sign_in_failures': SignInFailuresTable;
  'dashboard.audit_log': AuditLogTable;
  'dashboard.sso_logins': SsoLoginsTable;
  'dashboard.team_members': TeamMembersTable;
}

export type User = Selectable<UsersTable>;
export type DashboardDb = Kysely<Database>;

export const createDashboardDb = (url: string, options: { max?: number } = {}): DashboardDb =>
  createDb<Database>(url, options);

/** Idempotent; safe when several instances start at once. */
export const migrateDashboardDb = (db: DashboardDb) =>
  migrateToLatest(db as Kysely<unknown>, DASHBOARD_SCHEMA, migrations);
