import type { Migration } from 'kysely/migration';
import * as createKeys from './2026_11_20_120000_create_keys';
import * as keyGovernance from './2026_11_23_090000_key_governance';
import * as teams from './2026_11_26_120000_teams';
import * as keyRateLimitTpm from './2026_11_26_123000_key_rate_limit_tpm';
import * as auditLog from './2026_11_26_130000_audit_log';
import * as teamLimits from './2026_11_26_160000_team_limits';
import * as keyStoreBodies from './2026_11_27_140000_key_store_bodies';
import * as accountStoreBodies from './2026_11_27_220000_account_store_bodies';

/** Every migration of the `keys` schema, by name (names sort in the order they run). */
export const migrations: Record<string, Migration> = {
  '2026_11_20_120000_create_keys': createKeys,
  '2026_11_23_090000_key_governance': keyGovernance,
  '2026_11_26_120000_teams': teams,
  '2026_11_26_123000_key_rate_limit_tpm': keyRateLimitTpm,
  '2026_11_26_130000_audit_log': auditLog,
  '2026_11_26_160000_team_limits': teamLimits,
  '2026_11_27_140000_key_store_bodies': keyStoreBodies,
  '2026_11_27_220000_account_store_bodies': accountStoreBodies,
};
