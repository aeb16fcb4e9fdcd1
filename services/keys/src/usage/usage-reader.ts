import { createServiceSigner, type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { type KeyUsage, keysUsage } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { LimitReset } from '@tollgate/money';

export type { KeyUsage } from '@tollgate/contracts';

export const ZERO_USAGE: KeyUsage = Object.freeze({
  usage: '0',
  usage_daily: '0',
  usage_weekly: '0',
  usage_monthly: '0',
});

/**
 * Where key objects get their usage figures. Billing owns spend; the keys service only reads it.
 * The map holds an entry per requested id (zeros for a key billing has never seen).
 */
export interface UsageReader {
  read(keys: ReadonlyArray<{ id: string; limitReset: LimitReset | null }>): Promise<Map<string, KeyUsage>>;
  close(): Promise<void>;
}

/** BILLING_URL unset: every key reads as zero usage. */
export const zeroUsageReader: UsageReader = {
  async read(keys) {
    return new Map(keys.map((k) => [k.id, ZERO_USAGE]));
  },
  async close() {},
};

/**
 * Billing's `POST /internal/usage/keys` (contract `keysUsage` in @tollgate/contracts) through the
 * shared service client. Billing unreachable or answering outside the contract: 503 without the
 * internal detail (which is logged).
 */
export function billingUsageReader(options: {
  billingUrl: string;
  /** The keys service's identity. */
  signer: ServiceSigner;
  timeoutMs?: number;
  logger?: Logger;
}): UsageReader {
  const billing = createServiceClient({
    service: 'billing',
    url: options.billingUrl,
    token: serviceTokenSource(options.signer, 'billing'),
    timeoutMs: options.timeoutMs ?? 3000,
    logger: options.logger,
    ownerErrors: 'unavailable',
    unavailableMessage: 'Usage figures are unavailable (billing did not answer); retry later',
  });
  return {
    async read(keys) {
      const out = new Map<string, KeyUsage>();
      if (keys.length === 0) return out;
      const answer = await billing.call({
        method: keysUsage.method,
        path: keysUsage.path,
        body: { keys: keys.map((k) => ({ id: k.id, limit_reset: k.limitReset })) },
        response: keysUsage.response,
      });
      for (const k of keys) out.set(k.id, answer.data[k.id] ?? ZERO_USAGE);
      return out;
    },
    close: () => billing.close(),
  };
}

export function createUsageReader(
  config: { BILLING_URL?: string | undefined; SERVICE_PRIVATE_KEY: string },
  logger?: Logger,
): UsageReader {
  return config.BILLING_URL
    ? billingUsageReader({
        billingUrl: config.BILLING_URL,
        signer: createServiceSigner('keys', config.SERVICE_PRIVATE_KEY),
        logger,
      })
    : zeroUsageReader;
}
