import type { Migration } from 'kysely/migration';
import * as createDashboard from './2026_11_23_090000_create_dashboard';
import * as signInBackoff from './2026_11_26_100000_sign_in_backoff';
import * as usersPerAccount from './2026_11_26_110000_users_per_account';
import * as auditLog from './2026_11_26_150000_audit_log';
import * as ssoAndTeams from './2026_11_26_170000_sso_and_teams';

/** Every dashboard migration, in order (names sort chronologically). */
export const migrations: Record<string, Migration> = {
  '2026_11_23_090000_create_dashboard': createDashboard,
  '2026_11_26_100000_sign_in_backoff': signInBackoff,
  '2026_11_26_110000_users_per_account': usersPerAccount,
  '2026_11_26_150000_audit_log': auditLog,
  '2026_11_26_170000_sso_and_teams': ssoAndTeams,
};
