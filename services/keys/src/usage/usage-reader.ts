import { createServiceSigner, type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { type KeyUsage, keysUsage } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { type LimitReset, periodKey, toDecimal } from '@tollgate/money';
import type { RedisClient } from '@tollgate/redis';
import { readCommittedKeySpend } from '@tollgate/spend';

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

/**
 * Committed spend from the spend counters billing keeps in Redis (the key hashes of `@tollgate/spend`,
 * the figures the spend guard enforces), one round trip; keys Redis cannot answer for (no built hash:
 * a key without a limit, or one idle since its hash expired) and every key when Redis fails are read
 * through `fallback` (billing's Postgres totals), in one call. Both sources hold committed spend only:
 * pending costs and reservations of requests in flight are never included.
 */
function redisFirstUsageReader(options: {
  redis: RedisClient;
  prefix: string;
  fallback: UsageReader;
  clock?: () => Date;
  logger?: Logger;
}): UsageReader {
  const clock = options.clock ?? (() => new Date());
  return {
    async read(keys) {
      if (keys.length === 0) return new Map();
      const now = clock();
      const periods = {
        daily: periodKey('daily', now),
        weekly: periodKey('weekly', now),
        monthly: periodKey('monthly', now),
        all: periodKey(null, now),
      };
      const ids = [...new Set(keys.map((k) => k.id))];
      let spend: Awaited<ReturnType<typeof readCommittedKeySpend>>;
      try {
        spend = await readCommittedKeySpend(options.redis, options.prefix, ids, Object.values(periods));
      } catch (err) {
        options.logger?.warn({ err }, 'spend counters unreadable in Redis; asking billing');
        return options.fallback.read(keys);
      }
      const out = new Map<string, KeyUsage>();
      const rest: typeof keys = keys.filter((k) => !spend.get(k.id));
      for (const k of keys) {
        const s = spend.get(k.id);
        if (!s) continue;
        const get = (p: string) => toDecimal(s.get(p) ?? 0n);
        out.set(k.id, {
          usage: get(periodKey(k.limitReset, now)),
          usage_daily: get(periods.daily),
          usage_weekly: get(periods.weekly),
          usage_monthly: get(periods.monthly),
        });
      }
      if (rest.length > 0) for (const [id, u] of await options.fallback.read(rest)) out.set(id, u);
      return out;
    },
    close: () => options.fallback.close(),
  };
}

export function createUsageReader(
  config: { BILLING_URL?: string | undefined; SERVICE_PRIVATE_KEY: string; REDIS_PREFIX?: string },
  logger?: Logger,
  redis?: RedisClient,
): UsageReader {
  if (!config.BILLING_URL) return zeroUsageReader;
  const billing = billingUsageReader({
    billingUrl: config.BILLING_URL,
    signer: createServiceSigner('keys', config.SERVICE_PRIVATE_KEY),
    logger,
  });
  return redis && config.REDIS_PREFIX !== undefined
    ? redisFirstUsageReader({ redis, prefix: config.REDIS_PREFIX, fallback: billing, logger })
    : billing;
}
