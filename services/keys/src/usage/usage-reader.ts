import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import { AppError } from '@tollgate/errors';
import type { LimitReset } from '@tollgate/money';
import { z } from 'zod';

/** Spend figures of one key, decimal USD strings. `usage` = spend in the key's current limit period. */
export interface KeyUsage {
  usage: string;
  usage_daily: string;
  usage_weekly: string;
  usage_monthly: string;
}

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
}

/** BILLING_URL unset: every key reads as zero usage. */
export const zeroUsageReader: UsageReader = {
  async read(keys) {
    return new Map(keys.map((k) => [k.id, ZERO_USAGE]));
  },
};

const decimal = z.string().regex(/^-?\d+(\.\d+)?$/);
const usageResponse = z.object({
  data: z.record(
    z.string(),
    z.object({ usage: decimal, usage_daily: decimal, usage_weekly: decimal, usage_monthly: decimal }),
  ),
});

/** Billing's `POST /internal/usage/keys` (contracts.md), called with a `{kind:'service', service:'keys'}` token. */
export function billingUsageReader(options: {
  billingUrl: string;
  secret: string;
  timeoutMs?: number;
}): UsageReader {
  const url = `${options.billingUrl}/internal/usage/keys`;
  return {
    async read(keys) {
      const out = new Map<string, KeyUsage>();
      if (keys.length === 0) return out;
      let body: unknown;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            [SERVICE_TOKEN_HEADER]: signServiceToken({ kind: 'service', service: 'keys' }, options.secret),
          },
          body: JSON.stringify({ keys: keys.map((k) => ({ id: k.id, limit_reset: k.limitReset })) }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 3000),
        });
        if (!res.ok) throw new Error(`billing answered ${res.status}`);
        body = await res.json();
      } catch (err) {
        throw new AppError(
          'service_unavailable',
          'Usage figures are unavailable (billing did not answer); retry later',
          {
            cause: String((err as Error).message ?? err),
          },
        );
      }
      const parsed = usageResponse.safeParse(body);
      if (!parsed.success) {
        throw new AppError(
          'service_unavailable',
          'Usage figures are unavailable (unexpected answer from billing)',
        );
      }
      for (const k of keys) out.set(k.id, parsed.data.data[k.id] ?? ZERO_USAGE);
      return out;
    },
  };
}

export function createUsageReader(config: {
  BILLING_URL?: string | undefined;
  SERVICE_JWT_SECRET: string;
}): UsageReader {
  return config.BILLING_URL
    ? billingUsageReader({ billingUrl: config.BILLING_URL, secret: config.SERVICE_JWT_SECRET })
    : zeroUsageReader;
}
