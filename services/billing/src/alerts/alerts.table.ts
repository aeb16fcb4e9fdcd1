import type { ColumnType, Generated, Selectable } from 'kysely';
import type { Numeric } from '../generations/generations.table';

/** A webhook endpoint of an account: where alerts go, which thresholds, the encrypted signing secret. */
export interface WebhookEndpointsTable {
  id: Generated<string>;
  account_id: string;
  url: string;
  /** Percentages of a limit (1…100) that alert when spend reaches them. */
  thresholds: ColumnType<number[], number[] | undefined, number[]>;
  /** Alert when prepaid credits left fall below this many USD; null = no low-credit alert. */
  low_credit: Numeric | null;
  /** AES-256-GCM of the `whsec_…` secret (alerts/secret-box.ts); never the plaintext. */
  secret_ciphertext: Buffer;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date | string>;
}

export type WebhookEndpoint = Selectable<WebhookEndpointsTable>;

/** The alert outbox: one row per (scope, scope id, period, threshold), ever. */
export interface AlertsTable {
  id: Generated<string>;
  account_id: string;
  scope: 'key' | 'team' | 'account' | 'test';
  scope_id: string;
  period: string;
  threshold: string;
  payload: ColumnType<unknown, string, never>;
  created_at: ColumnType<Date, never, never>;
}

/** One alert to one endpoint: its retry schedule and outcome. */
export interface AlertDeliveriesTable {
  id: Generated<string>;
  alert_id: string;
  endpoint_id: string;
  account_id: string;
  status: ColumnType<
    'pending' | 'delivered' | 'failed',
    'pending' | undefined,
    'pending' | 'delivered' | 'failed'
  >;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  delivered_at: ColumnType<Date | null, never, Date | string | null>;
  created_at: ColumnType<Date, never, never>;
}

/** The delivery log: one row per attempt. */
export interface AlertDeliveryAttemptsTable {
  id: Generated<string>;
  delivery_id: string;
  endpoint_id: string;
  account_id: string;
  attempt: number;
  attempted_at: ColumnType<Date, never, never>;
  /** HTTP status of the answer; null when none came (refused, timeout, blocked address). */
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}
