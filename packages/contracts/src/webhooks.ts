import { z } from 'zod';
import { accountPath, decimalString, usdAmountInput } from './common';
import { uuid } from './ids';

/**
 * Alert webhooks (issue 29): the public management API `/webhooks` (management keys, forwarded by the
 * proxy to billing) and the dashboard's `/internal/accounts/{id}/webhooks…` on billing use the same
 * bodies and objects. Billing owns endpoints, the alert outbox and the delivery log.
 */

/** Most endpoints per account. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
/** Highest low-credit amount (USD). */
const MAX_LOW_CREDIT_USD = 1_000_000_000;

const url = z
  .string({ error: 'expected a URL string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(2048, { error: 'must be at most 2048 characters' });

const thresholds = z
  .array(
    z
      .number({ error: 'expected whole percentages' })
      .int({ error: 'expected whole percentages' })
      .min(1, { error: 'each must be between 1 and 100' })
      .max(100, { error: 'each must be between 1 and 100' }),
    { error: 'expected an array of percentages (1–100)' },
  )
  .min(1, { error: 'must name at least one percentage' })
  .max(10, { error: 'must name at most 10 percentages' })
  .transform((a) => [...new Set(a)].sort((x, y) => x - y));

/** A USD amount as a JSON number (>= 0, at most 10 decimals) or null; becomes a decimal string. */
const lowCredit = usdAmountInput(MAX_LOW_CREDIT_USD).nullable();

export const createWebhookBody = z.strictObject({
  url,
  /** Default 50, 80, 100. */
  thresholds: thresholds.optional(),
  low_credit: lowCredit.optional(),
  enabled: z.boolean({ error: 'expected true or false' }).optional(),
});

export const updateWebhookBody = z.strictObject({
  url: url.optional(),
  thresholds: thresholds.optional(),
  low_credit: lowCredit.optional(),
  enabled: z.boolean({ error: 'expected true or false' }).optional(),
});

export const webhookParams = z.object({
  webhookId: uuid('a webhook id'),
});

export const webhookObjectSchema = z.object({
  id: z.string(),
  url: z.string(),
  thresholds: z.array(z.number().int()),
  /** USD decimal string, or null. */
  low_credit: decimalString.nullable(),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookObject = z.output<typeof webhookObjectSchema>;

/** Creation's answer: the endpoint and its signing secret, shown this once only. */
export const createdWebhookSchema = webhookObjectSchema.extend({ secret: z.string().startsWith('whsec_') });

/** One delivery attempt of the log (newest first). */
export const webhookAttemptSchema = z.object({
  id: z.string(),
  alert_id: z.string(),
  /** `spend.threshold`, `credits.low` or `webhook.test`. */
  type: z.string(),
  attempt: z.number().int(),
  attempted_at: z.string(),
  /** HTTP status of the answer; null when none came (refused, timeout, blocked address). */
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
  /** The delivery's state after this attempt's run: pending (retrying), delivered or failed. */
  delivery_status: z.enum(['pending', 'delivered', 'failed']),
});
export type WebhookAttempt = z.output<typeof webhookAttemptSchema>;

export const webhookAttemptsQuery = z.strictObject(
  {
    limit: z.coerce.number({ error: 'expected a number' }).int().min(1).max(200).default(50),
  },
  { error: (i) => (i.code === 'unrecognized_keys' ? `${i.keys?.[0] ?? ''}: unknown parameter` : undefined) },
);

/** The dashboard's calls to billing (caller: dashboard). */
export const accountWebhooks = {
  list: {
    path: (accountId: string) => `${accountPath(accountId)}/webhooks`,
    response: z.object({ data: z.array(webhookObjectSchema) }),
  },
  create: {
    path: (accountId: string) => `${accountPath(accountId)}/webhooks`,
    response: z.object({ data: createdWebhookSchema }),
  },
  one: {
    path: (accountId: string, id: string) => `${accountPath(accountId)}/webhooks/${encodeURIComponent(id)}`,
    response: z.object({ data: webhookObjectSchema }),
  },
  remove: {
    path: (accountId: string, id: string) => `${accountPath(accountId)}/webhooks/${encodeURIComponent(id)}`,
    response: z.object({ data: z.object({ id: z.string(), deleted: z.literal(true) }) }),
  },
  test: {
    path: (accountId: string, id: string) =>
      `${accountPath(accountId)}/webhooks/${encodeURIComponent(id)}/test`,
    response: z.object({ data: webhookAttemptSchema }),
  },
  attempts: {
    path: (accountId: string, id: string) =>
      `${accountPath(accountId)}/webhooks/${encodeURIComponent(id)}/deliveries`,
    response: z.object({ data: z.array(webhookAttemptSchema) }),
  },
} as const;
