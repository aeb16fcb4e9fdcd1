import type { Migration } from 'kysely/migration';
import * as createBilling from './2026_11_20_130000_create_billing';
import * as createUsageRollups from './2026_11_23_080000_create_usage_rollups';
import * as generationAttempts from './2026_11_23_090000_generation_attempts';
import * as generationReferer from './2026_11_23_091000_generation_http_referer';
import * as generationApiSession from './2026_11_26_110000_generation_api_session';
import * as usageApps from './2026_11_26_120000_usage_apps';
import * as usageLatency from './2026_11_26_130000_usage_latency';
import * as generationSessionIndex from './2026_11_26_131000_generation_session_index';
import * as generationWithheldTools from './2026_11_26_140000_generation_withheld_tools';
import * as auditLog from './2026_11_26_150000_audit_log';
import * as teamSpend from './2026_11_26_170000_team_spend';
import * as partitionGenerations from './2026_11_27_090000_partition_generations';
import * as alerts from './2026_11_27_100000_alerts';
import * as refusals from './2026_11_27_110000_refusals';
import * as latencyRollups from './2026_11_27_120000_latency_rollups';
import * as generationBodies from './2026_11_27_141000_generation_bodies';
import * as usageAccountHourly from './2026_11_27_150000_usage_account_hourly';
import * as usageGroupHourly from './2026_11_27_190000_usage_group_hourly';
import * as usageKeyGroupHourly from './2026_11_27_200000_usage_key_group_hourly';

/** Every billing migration, in order (names sort chronologically). */
export const migrations: Record<string, Migration> = {
  '2026_11_20_130000_create_billing': createBilling,
  '2026_11_23_080000_create_usage_rollups': createUsageRollups,
  '2026_11_23_090000_generation_attempts': generationAttempts,
  '2026_11_23_091000_generation_http_referer': generationReferer,
  '2026_11_26_110000_generation_api_session': generationApiSession,
  '2026_11_26_120000_usage_apps': usageApps,
  '2026_11_26_130000_usage_latency': usageLatency,
  '2026_11_26_131000_generation_session_index': generationSessionIndex,
  '2026_11_26_140000_generation_withheld_tools': generationWithheldTools,
  '2026_11_26_150000_audit_log': auditLog,
  '2026_11_26_170000_team_spend': teamSpend,
  '2026_11_27_090000_partition_generations': partitionGenerations,
  '2026_11_27_100000_alerts': alerts,
  '2026_11_27_110000_refusals': refusals,
  '2026_11_27_120000_latency_rollups': latencyRollups,
  '2026_11_27_141000_generation_bodies': generationBodies,
  '2026_11_27_150000_usage_account_hourly': usageAccountHourly,
  '2026_11_27_190000_usage_group_hourly': usageGroupHourly,
  '2026_11_27_200000_usage_key_group_hourly': usageKeyGroupHourly,
};
