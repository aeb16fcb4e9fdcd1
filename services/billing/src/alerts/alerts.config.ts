import { z } from 'zod';
import { DEV_WEBHOOK_SECRET_KEY, parseSecretKey } from './secret-box';
import { parseCidrs } from './url-guard';

const ms = (def: number) => z.coerce.number().int().positive().default(def);

/** Billing's alert-webhook settings (docs/configuration.md "Alerts"). */
export const webhookEnv = {
  /**
   * AES-256-GCM key (32 bytes, base64: `openssl rand -base64 32`) the webhook signing secrets are
   * encrypted with. Required in production; development uses a fixed key from this repository.
   */
  WEBHOOK_SECRET_KEY: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (v === undefined) return;
      try {
        parseSecretKey(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  /**
   * Addresses webhooks may reach although private, loopback or link-local (comma-separated CIDRs or
   * addresses, e.g. `10.1.2.0/24,127.0.0.1`); empty: public addresses only.
   */
  WEBHOOK_ALLOWED_CIDRS: z
    .string()
    .default('')
    .superRefine((v, ctx) => {
      try {
        parseCidrs(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  /** Deadline of one delivery attempt (connect to end of the answer's headers and body). */
  WEBHOOK_TIMEOUT_MS: ms(10_000),
  /** How often each billing worker looks for due deliveries. */
  WEBHOOK_POLL_MS: ms(1_000),
  /** Wait after the first failed attempt; doubled after each failure up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_RETRY_BASE_MS: ms(10_000),
  WEBHOOK_RETRY_MAX_MS: ms(60 * 60_000),
  /** Attempts before a delivery is given up (logged as failed). 20 at the defaults ≈ 15 hours. */
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(1000).default(20),
  /**
   * Days the delivery log is kept: finished deliveries (delivered or failed) and their attempts older
   * than this are removed hourly (alerts/retention.ts). Threshold alerts themselves are kept.
   */
  WEBHOOK_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
};

/**
 * The key in force: the configured one, or the development key outside production. Production
 * refuses to start without its own (checked when billing starts, not by the config schema, so the
 * migration job needs no webhook key).
 */
export function webhookSecretKey(c: { NODE_ENV: string; WEBHOOK_SECRET_KEY?: string }): string {
  const key = c.WEBHOOK_SECRET_KEY?.trim();
  if (c.NODE_ENV === 'production' && (key === undefined || key === DEV_WEBHOOK_SECRET_KEY))
    throw new Error(
      'WEBHOOK_SECRET_KEY is required in production (32 bytes, base64: openssl rand -base64 32), not the development key',
    );
  return key ?? DEV_WEBHOOK_SECRET_KEY;
}
