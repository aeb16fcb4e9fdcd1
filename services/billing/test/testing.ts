import { randomBytes, randomUUID } from 'node:crypto';
import { DEV_SERVICE_KEYS, devServiceSigner, parsePrivateKey, type ServiceName } from '@tollgate/auth';
import type { KeyOwner } from '@tollgate/contracts';
import {
  createMessageSigner,
  declareUsageTopology,
  topologyNames,
  type UsageEvent,
  type UsageEventV1,
  type UsageTopology,
  usagePartition,
  usageTopology,
} from '@tollgate/events';
import { createLogger } from '@tollgate/logger';
import {
  createTestAmqp,
  createTestDatabase,
  createTestRedis,
  type TestAmqp,
  type TestDatabase,
  type TestRedis,
  testUsagePartitions,
} from '@tollgate/testkit';
import amqp from 'amqplib';
import { type BillingConfig, loadConfig } from '../src/config';
import type { KeyOwners } from '../src/keys/key-owners';
import { type BillingHandle, type BillingOptions, startBilling } from '../src/service';

/**
 * Test helpers for billing and for other services' tests that need a real billing (not exported
 * from the package root). Everything is isolated: own database, Redis prefix, queue names.
 */
export interface TestBillingStack {
  billing: BillingHandle;
  config: BillingConfig;
  db: TestDatabase;
  redis: TestRedis;
  amqp: TestAmqp;
  topology: UsageTopology;
  /**
   * Publishes raw bodies (persistent, confirmed) to the usage exchange, each signed with the proxy's
   * development key as the proxy does.
   */
  publish(...bodies: Array<UsageEvent | string | Buffer>): Promise<void>;
  /** The usage partition an account's events go to (0 with one partition). */
  partitionOf(accountId: string): number;
  /** The routing key of `accountId`'s partition (what to publish a hand-made message with). */
  routingKeyOf(accountId: string): string;
  /** Restarts billing against the same database, Redis prefix and queue. */
  restart(options?: BillingOptions): Promise<BillingHandle>;
  /** Stops billing and removes the database, Redis keys and queues. */
  cleanup(): Promise<void>;
}

/**
 * The keys billing's tests know, standing in for the keys service's `POST /internal/keys/owners`
 * (billing-only tests run no keys service; tests/e2e run the real one): every key a test makes
 * caller headers for (`keyHeaders`) or registers (`registerTestKey`) exists, in its account.
 */
const testKeys = new Map<string, KeyOwner>();

export function registerTestKey(key: {
  keyId: string;
  accountId: string;
  scope?: 'inference' | 'management';
  disabled?: boolean;
  revoked?: boolean;
  limit?: string | null;
  limitReset?: 'daily' | 'weekly' | 'monthly' | null;
  teamId?: string | null;
  teamLimit?: string | null;
  teamLimitReset?: 'daily' | 'weekly' | 'monthly' | null;
}): void {
  testKeys.set(key.keyId, {
    id: key.keyId,
    accountId: key.accountId,
    scope: key.scope ?? 'inference',
    disabled: key.disabled ?? false,
    revoked: key.revoked ?? false,
    expiresAt: null,
    limit: key.limit ?? null,
    limitReset: key.limitReset ?? null,
    teamId: key.teamId ?? null,
    teamLimit: key.teamLimit ?? null,
    teamLimitReset: key.teamLimitReset ?? null,
  });
}

const testKeyOwners: KeyOwners = {
  async accountsOf(ids) {
    const out = new Map<string, string>();
    for (const id of ids) {
      const k = testKeys.get(id);
      if (k) out.set(id, k.accountId);
    }
    return out;
  },
  read: async (id) => testKeys.get(id) ?? null,
  current: async (ids) => ids.flatMap((id) => testKeys.get(id) ?? []),
  close: async () => {},
};

const proxySigner = createMessageSigner('proxy', parsePrivateKey(DEV_SERVICE_KEYS.proxy.privateKey));

/** The AMQP headers the proxy signs a message body with (development key). */
export const signedHeaders = (body: Buffer, sentAt = Date.now()) => proxySigner.headers(body, sentAt);

/**
 * Billing with its own database, Redis prefix and queues, on TOLLGATE_TEST_USAGE_PARTITIONS usage
 * partitions (default 1; pass USAGE_PARTITIONS to choose). Its usage checks default to `signature`
 * only (these tests publish figures of their own); pass USAGE_CHECKS to test the others.
 */
export async function startTestBilling(
  env: Record<string, string> = {},
  options: BillingOptions = {},
): Promise<TestBillingStack> {
  const [db, redis] = await Promise.all([createTestDatabase({ migrated: true }), createTestRedis()]);
  const testAmqp = createTestAmqp();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    AMQP_URL: testAmqp.url,
    AMQP_PREFIX: testAmqp.prefix,
    LOG_LEVEL: 'silent',
    BATCH_TIMEOUT_MS: '20',
    USAGE_CHECKS: 'signature',
    USAGE_PARTITIONS: String(testUsagePartitions()),
    ...env,
  });
  const topology = usageTopology(config.AMQP_PREFIX, config.USAGE_PARTITIONS);
  const logger = createLogger({ name: 'billing-test', level: config.LOG_LEVEL });
  let billing = await startBilling(config, { logger, owners: testKeyOwners, ...options });
  await billing.consumer?.ready();

  const conn = await amqp.connect(config.AMQP_URL);
  const ch = await conn.createConfirmChannel();
  await declareUsageTopology(ch, topology);

  const stack: TestBillingStack = {
    billing,
    config,
    db,
    redis,
    amqp: testAmqp,
    topology,
    async publish(...bodies) {
      for (const b of bodies) {
        const buf = Buffer.isBuffer(b) ? b : Buffer.from(typeof b === 'string' ? b : JSON.stringify(b));
        // As the proxy routes: an event to its account's partition (an undecodable body to the first).
        const account = typeof b === 'object' && !Buffer.isBuffer(b) ? b.account_id : undefined;
        const route = account ? stack.routingKeyOf(account) : (topology.partitions[0] ?? topology).routingKey;
        ch.publish(topology.exchange, route, buf, {
          persistent: true,
          contentType: 'application/json',
          headers: signedHeaders(buf),
        });
      }
      await ch.waitForConfirms();
    },
    partitionOf: (accountId) => usagePartition(accountId, topology.partitions.length),
    routingKeyOf: (accountId) => (topology.partitions[stack.partitionOf(accountId)] ?? topology).routingKey,
    async restart(opts = {}) {
      await billing.close();
      billing = await startBilling(config, { logger, owners: testKeyOwners, ...options, ...opts });
      await billing.consumer?.ready();
      stack.billing = billing;
      return billing;
    },
    async cleanup() {
      await billing.close();
      await conn.close().catch(() => {});
      await testAmqp.cleanup(topologyNames(topology));
      await redis.cleanup();
      await db.drop();
    },
  };
  return stack;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export function testRequestId(at = new Date()): string {
  let tail = '';
  for (const b of randomBytes(20)) tail += ALNUM[b % ALNUM.length];
  return `gen-${Math.floor(at.getTime() / 1000)}-${tail}`;
}

/** A valid v1 usage event; `cost` and `finished_at` are what billing charges and where. */
export function usageEvent(overrides: Partial<UsageEventV1> = {}): UsageEventV1 {
  const finished = overrides.finished_at ?? new Date().toISOString();
  return {
    type: 'usage',
    version: 1,
    id: testRequestId(new Date(finished)),
    account_id: randomUUID(),
    key_id: randomUUID(),
    model: 'openai/gpt-4o-mini',
    provider_name: 'sim',
    upstream_model: 'gpt-4o-mini',
    upstream_id: 'chatcmpl-test',
    app: null,
    streamed: false,
    cancelled: false,
    finish_reason: 'stop',
    usage_source: 'provider',
    tokens: { prompt: 10, completion: 20, cached: 0, cache_write: 0, reasoning: 0 },
    cost: '0.001',
    is_byok: false,
    error: null,
    started_at: finished,
    finished_at: finished,
    latency_ms: 100,
    generation_time_ms: 400,
    ...overrides,
  };
}

/** Headers of a caller, as the proxy forwards them (signed with the proxy's dev key, for billing). */
export const keyHeaders = async (caller: {
  keyId: string;
  accountId: string;
  scope?: 'inference' | 'management';
}) => {
  if (!testKeys.has(caller.keyId)) registerTestKey(caller);
  return {
    'x-service-token': await devServiceSigner('proxy').sign('billing', {
      kind: 'key',
      keyId: caller.keyId,
      accountId: caller.accountId,
      scope: caller.scope ?? 'inference',
    }),
  };
};
/** Headers of an internal call to billing from `service` (signed with its dev key). */
export const serviceHeaders = async (service: ServiceName) => ({
  'x-service-token': await devServiceSigner(service).sign('billing'),
  'content-type': 'application/json',
});
