import type { AuditLogTable } from '@tollgate/db';
import { createDb, migrateToLatest } from '@tollgate/db';
import type { Kysely } from 'kysely';
import { migrations } from '../migrations';
import type {
  AlertDeliveriesTable,
  AlertDeliveryAttemptsTable,
  AlertsTable,
  WebhookEndpointsTable,
} from './alerts/alerts.table';
import type { UsageDailyTable, UsageHourlyTable } from './analytics/usage-rollup.table';
import type { AccountSettingsTable, CreditLedgerTable } from './credits/credits.table';
import type { GenerationBodiesTable } from './generations/bodies';
import type { GenerationsTable } from './generations/generations.table';
import type { AccountUsageTable, KeySpendTable, TeamSpendTable } from './spend/spend.table';

/** Postgres schema owned by billing. */
export const BILLING_SCHEMA = 'billing';

export interface Database {
  'billing.generations': GenerationsTable;
  'billing.generation_bodies': GenerationBodiesTable;
  'billing.key_spend': KeySpendTable;
  'billing.team_spend': TeamSpendTable;
  'billing.account_usage': AccountUsageTable;
  'billing.credit_ledger': CreditLedgerTable;
  'billing.account_settings': AccountSettingsTable;
  'billing.usage_hourly': UsageHourlyTable;
  'billing.usage_daily': UsageDailyTable;
  'billing.audit_log': AuditLogTable;
  'billing.webhook_endpoints': WebhookEndpointsTable;
  'billing.alerts': AlertsTable;
  'billing.alert_deliveries': AlertDeliveriesTable;
  'billing.alert_delivery_attempts': AlertDeliveryAttemptsTable;
}

export type BillingDb = Kysely<Database>;

export const createBillingDb = (url: string, options: { max?: number } = {}): BillingDb =>
  createDb<Database>(url, options);

/** Idempotent; safe when several instances start at once. */
export const migrateBillingDb = (db: BillingDb) =>
  migrateToLatest(db as Kysely<unknown>, BILLING_SCHEMA, migrations);
