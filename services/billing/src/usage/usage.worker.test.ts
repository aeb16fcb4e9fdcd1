import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createUsageConsumer } from '@tollgate/events';
import { createLogger } from '@tollgate/logger';
import { serveMetrics } from '@tollgate/metrics';
import { toUnits } from '@tollgate/money';
import { createSpendStore, spendAccountHash, spendKeyHash } from '@tollgate/spend';
import { createTcpProxy, hostPortOf, testUsagePartitions } from '@tollgate/testkit';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';
import { startBilling } from '../service';
import { classifyBillingFailure } from './failure';
import { createUsageRecorder } from './usage.recorder';

let s: TestBillingStack;
type ErrorJson = { error: { message: string; metadata: { error_type: string } } };

beforeAll(async () => {
  s = await startTestBilling();
});
afterAll(async () => {
  await s.cleanup();
});

const spendOf = async (keyId: string) =>
  Object.fromEntries(
    (
      await s.billing.db
        .selectFrom('billing.key_spend')
        .select(['period', 'amount'])
        .where('key_id', '=', keyId)
        .execute()
    ).map((r) => [r.period, Number(r.amount)]),
  );
const countOf = async (id: string) =>
  Number(
    (
      await s.billing.db
        .selectFrom('billing.generations')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).n,
  );
const getGeneration = async (id: string, caller: { keyId: string; accountId: string }) =>
  fetch(`${s.billing.url}/generation?id=${id}`, { headers: await keyHeaders(caller) });

describe('usage worker', () => {
  it('consumes every usage partition of the run (TOLLGATE_TEST_USAGE_PARTITIONS): an event on each recorded once', async () => {
    expect(s.topology.partitions).toHaveLength(testUsagePartitions());
    const onPartition = (i: number) => {
      for (;;) {
        const account = randomUUID();
        if (s.partitionOf(account) === i) return usageEvent({ account_id: account, cost: '0.125' });
      }
    };
    const events = s.topology.partitions.map((_, i) => onPartition(i));
    await s.publish(...events);
    await vi.waitFor(
      async () => expect(await Promise.all(events.map((e) => countOf(e.id)))).toEqual(events.map(() => 1)),
      { timeout: 5000 },
    );
  });

  it('records a published event with its spend in all four periods, visible through GET /generation', async () => {
    const e = usageEvent({
      cost: '0.0125',
      finished_at: '2026-11-20T10:00:00.000Z',
      app: 'My App',
      http_referer: 'https://app.example/',
      streamed: true,
    });
    await s.publish(e);
    await vi.waitFor(
      async () =>
        expect((await getGeneration(e.id, { keyId: e.key_id, accountId: e.account_id })).status).toBe(200),
      {
        timeout: 5000,
      },
    );
    const body = (await (await getGeneration(e.id, { keyId: e.key_id, accountId: e.account_id })).json()) as {
      data: Record<string, unknown>;
    };
    expect(body).toMatchObject({
      data: {
        id: e.id,
        model: 'openai/gpt-4o-mini',
        provider_name: 'sim',
        upstream_id: 'chatcmpl-test',
        created_at: '2026-11-20T10:00:00.000Z',
        streamed: true,
        cancelled: false,
        finish_reason: 'stop',
        tokens_prompt: 10,
        tokens_completion: 20,
        tokens_cached: 0,
        tokens_cache_write: 0,
        tokens_reasoning: 0,
        total_cost: 0.0125,
        is_byok: false,
        usage_source: 'provider',
        app: 'My App',
        latency_ms: 100,
        generation_time_ms: 400,
        // The event carries no overhead (a proxy before it existed); streamed: 20 tokens in 0.3 s
        // after the first token.
        gateway_overhead_ms: null,
        tokens_per_second: 66.7,
        attempts: [],
        // OpenRouter's record fields.
        http_referer: 'https://app.example/',
        origin: 'https://app.example/',
        usage: 0.0125,
        api_type: 'completions',
        latency: 100,
        generation_time: 400,
        native_tokens_prompt: 10,
        native_tokens_completion: 20,
        native_finish_reason: 'stop',
        upstream_inference_cost: null,
      },
    });
    expect(Object.keys(body.data)).toHaveLength(54);
    expect(await spendOf(e.key_id)).toEqual({
      'd2026-11-20': 0.0125,
      'w2026-W47': 0.0125,
      'm2026-11': 0.0125,
      all: 0.0125,
    });
  });

  it('marks a request billed from an estimate as usage_source estimated', async () => {
    const e = usageEvent({
      usage_source: 'estimated',
      cancelled: true,
      finish_reason: null,
      upstream_id: null,
    });
    await s.publish(e);
    await vi.waitFor(async () => expect(await countOf(e.id)).toBe(1), { timeout: 5000 });
    const body = (await (await getGeneration(e.id, { keyId: e.key_id, accountId: e.account_id })).json()) as {
      data: Record<string, unknown>;
    };
    expect(body.data).toMatchObject({
      usage_source: 'estimated',
      cancelled: true,
      finish_reason: null,
      upstream_id: null,
    });
  });

  it('records the front door of each event as its api_type (chat when the event names none)', async () => {
    const base = usageEvent();
    const { api_type: _none, ...legacy } = base;
    const messages = usageEvent({ key_id: base.key_id, account_id: base.account_id, api_type: 'messages' });
    const embeddings = usageEvent({
      key_id: base.key_id,
      account_id: base.account_id,
      api_type: 'embeddings',
    });
    await s.publish(legacy as typeof base, messages, embeddings);
    await vi.waitFor(async () => expect(await countOf(embeddings.id)).toBe(1), { timeout: 5000 });
    const rows = await s.billing.db
      .selectFrom('billing.generations')
      .select(['id', 'api_type'])
      .where('id', 'in', [base.id, messages.id, embeddings.id])
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, r.api_type]))).toEqual({
      [base.id]: null,
      [messages.id]: 'messages',
      [embeddings.id]: 'embeddings',
    });
    // GET /generation: chat completions keep OpenRouter's `completions`, other doors say theirs.
    const apiTypeOf = async (id: string) =>
      (
        (await (await getGeneration(id, { keyId: base.key_id, accountId: base.account_id })).json()) as {
          data: { api_type: string };
        }
      ).data.api_type;
    expect(await apiTypeOf(base.id)).toBe('completions');
    expect(await apiTypeOf(messages.id)).toBe('messages');
    expect(await apiTypeOf(embeddings.id)).toBe('embeddings');
  });

  it('records an event published twice once and charges it once', async () => {
    const e = usageEvent({ cost: '0.5' });
    await s.publish(e, e);
    const later = usageEvent({ key_id: e.key_id, account_id: e.account_id, cost: '0.25' });
    await s.publish(e, later); // a third copy in a later batch, then a marker event
    await vi.waitFor(async () => expect(await countOf(later.id)).toBe(1), { timeout: 5000 });
    expect(await countOf(e.id)).toBe(1);
    expect((await spendOf(e.key_id)).all).toBe(0.75);
  });

  it('dead-letters an undecodable or invalid event and keeps recording valid ones', async () => {
    const good = usageEvent();
    await s.publish('not json', JSON.stringify({ ...usageEvent(), cost: -1 }), good);
    await vi.waitFor(async () => expect(await countOf(good.id)).toBe(1), { timeout: 5000 });
    const conn = await amqp.connect(s.config.AMQP_URL);
    try {
      const ch = await conn.createChannel();
      await vi.waitFor(
        async () => expect((await ch.checkQueue(s.topology.deadLetterQueue)).messageCount).toBe(2),
        {
          timeout: 5000,
        },
      );
    } finally {
      await conn.close();
    }
  });

  it('never bills twice when the batch is requeued after the commit (handler fails before the ack)', async () => {
    // A second consumer on the same queue whose handle commits and then throws once: nack + requeue.
    await s.billing.consumer?.close();
    const logger = createLogger({ name: 't', level: 'silent' });
    const recorder = createUsageRecorder({
      db: s.billing.db,
      spend: createSpendStore(s.billing.redis, { prefix: s.config.REDIS_PREFIX }),
      logger,
      clock: () => new Date(),
    });
    let failures = 0;
    const e = usageEvent({ cost: '1.5' });
    const consumer = createUsageConsumer({
      url: s.config.AMQP_URL,
      topology: s.topology,
      partition: s.partitionOf(e.account_id),
      logger,
      prefetch: 10,
      batchSize: 10,
      batchTimeoutMs: 10,
      retryBackoff: { initialDelayMs: 10, maxDelayMs: 10 },
      handle: async (batch) => {
        await recorder.record(batch.filter((e) => e.type === 'usage'));
        if (failures++ === 0) throw new Error('crash after commit');
      },
    });
    try {
      await consumer.ready();
      await s.publish(e);
      await vi.waitFor(() => expect(consumer.stats().handled).toBe(1), { timeout: 5000 });
      expect(consumer.stats().failedBatches).toBe(1);
      expect(await countOf(e.id)).toBe(1);
      expect((await spendOf(e.key_id)).all).toBe(1.5);
    } finally {
      await consumer.close();
      await s.restart();
    }
  });

  it('a worker process killed after commit and before ack: after restart one record, one charge, Redis counters right', async () => {
    await s.billing.consumer?.close();
    const e = usageEvent({ cost: '2' });
    // Redis hashes for the key and account exist (as after an admit), so the worker must update them.
    const store = createSpendStore(s.billing.redis, { prefix: s.config.REDIS_PREFIX });
    const now = Date.now();
    await store.beginRebuild({ keyId: e.key_id, accountId: e.account_id }, now);
    await store.loadKey(e.account_id, e.key_id, now, { d: 'd0', w: 'w0', m: 'm0' }, []);
    await store.loadAccount(e.account_id, now, {
      usageUnits: 0n,
      creditsUnits: 0n,
      postpaid: true,
      version: 0,
    });

    try {
      await crashAfterCommit(e);
    } finally {
      await s.restart();
    }
    const units = String(toUnits('2'));
    await vi.waitFor(
      async () =>
        expect(
          await s.redis.client.hget(spendKeyHash(s.config.REDIS_PREFIX, e.account_id, e.key_id), 'all'),
        ).toBe(units),
      { timeout: 10_000 },
    );
    expect(await s.redis.client.hget(spendAccountHash(s.config.REDIS_PREFIX, e.account_id), 'usage')).toBe(
      units,
    );
    expect(await countOf(e.id)).toBe(1);
    expect((await spendOf(e.key_id)).all).toBe(2);
  }, 120_000); // a tsx worker process starting on a loaded host: up to a minute

  async function crashAfterCommit(e: ReturnType<typeof usageEvent>) {
    const fixture = fileURLToPath(new URL('./fixtures/crash-after-commit.ts', import.meta.url));
    const child = spawn('pnpm', ['exec', 'tsx', fixture], {
      env: {
        ...process.env,
        DATABASE_URL: s.config.DATABASE_URL,
        REDIS_URL: s.config.REDIS_URL,
        REDIS_PREFIX: s.config.REDIS_PREFIX,
        AMQP_URL: s.config.AMQP_URL,
        AMQP_PREFIX: s.config.AMQP_PREFIX,
        USAGE_PARTITIONS: String(s.config.USAGE_PARTITIONS),
        USAGE_WORKER_PARTITIONS: String(s.partitionOf(e.account_id)),
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on('exit', (code, signal) => resolve(signal ?? code)),
    );
    await vi.waitFor(() => expect(output).toContain('consuming'), { timeout: 60_000 });
    await s.publish(e);
    const exit = await exited;
    expect(['SIGKILL', 137], output).toContain(exit); // 137 when pnpm reports its killed child
    // Committed, never acked, Redis never updated.
    expect(await countOf(e.id)).toBe(1);
    expect(
      await s.redis.client.hget(spendKeyHash(s.config.REDIS_PREFIX, e.account_id, e.key_id), 'all'),
    ).toBeNull();
  }

  it('keeps GET /generation at 404 for another account and for an unknown id, 400 for a malformed one', async () => {
    const e = usageEvent();
    await s.publish(e);
    await vi.waitFor(async () => expect(await countOf(e.id)).toBe(1), { timeout: 5000 });
    const other = { keyId: randomUUID(), accountId: randomUUID() };
    const res = await getGeneration(e.id, other);
    expect(res.status, await res.clone().text()).toBe(404);
    expect(((await res.json()) as ErrorJson).error.metadata.error_type).toBe('not_found');
    expect((await getGeneration(usageEvent().id, { keyId: e.key_id, accountId: e.account_id })).status).toBe(
      404,
    );
    const bad = await getGeneration('nope', { keyId: e.key_id, accountId: e.account_id });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorJson).error.message).toMatch(/^id:/);
  });

  it('waits out a Postgres outage in-process: nothing dead-lettered, every event recorded once when it returns', async () => {
    await s.billing.consumer?.close();
    const pgProxy = await createTcpProxy(hostPortOf(s.config.DATABASE_URL, 5432));
    const worker = await startBilling(
      { ...s.config, DATABASE_URL: pgProxy.url(s.config.DATABASE_URL), PORT: 0 },
      { logger: createLogger({ name: 't', level: 'silent' }) },
    );
    try {
      await worker.consumer!.ready();
      await pgProxy.stop();
      const events = [usageEvent({ cost: '0.25' }), usageEvent({ cost: '0.5' }), usageEvent({ cost: '1' })];
      await s.publish(...events);
      await vi.waitFor(() => expect(worker.consumer!.stats().transientRetries).toBeGreaterThanOrEqual(3), {
        timeout: 20_000,
      });
      expect(worker.consumer!.stats().lagMs).toBeGreaterThan(0);
      const listener = await serveMetrics({ registry: worker.metrics, port: 0, host: '127.0.0.1' });
      const metrics = await (await fetch(`${listener.url}/metrics`)).text();
      await listener.close();
      expect(metrics).toMatch(
        /^tollgate_billing_lag_seconds [1-9]|^tollgate_billing_lag_seconds 0\.[0-9]*[1-9]/m,
      );
      expect(worker.consumer!.stats().deadLettered).toBe(0);
      await pgProxy.start();
      await vi.waitFor(() => expect(worker.consumer!.stats().handled).toBe(3), { timeout: 30_000 });
      for (const e of events) expect(await countOf(e.id)).toBe(1);
      expect((await spendOf(events[2]!.key_id)).all).toBe(1);
      expect(worker.consumer!.stats().deadLettered).toBe(0);
    } finally {
      await worker.close();
      await pgProxy.close();
      await s.restart();
    }
  }, 60_000);
});

describe('classifyBillingFailure (real errors)', () => {
  it('calls unreachable servers, shutdowns, serialization failures and deadlocks transient, bad data permanent', async () => {
    const pg = await import('pg');
    const refused = new pg.default.Client({ connectionString: 'postgres://postgres@127.0.0.1:1/x' });
    const connectErr = await refused.connect().catch((e: unknown) => e);
    expect(classifyBillingFailure(connectErr)).toBe('transient');
    const client = new pg.default.Client({ connectionString: s.config.DATABASE_URL });
    await client.connect();
    try {
      const badJson = await client.query(`select '{"a":"\\ud800"}'::jsonb`).catch((e: unknown) => e);
      expect((badJson as { code?: string }).code).toMatch(/^22/);
      expect(classifyBillingFailure(badJson)).toBe('permanent');
      const syntax = await client.query('selec 1').catch((e: unknown) => e);
      expect(classifyBillingFailure(syntax)).toBe('permanent');
    } finally {
      await client.end();
    }
    for (const code of ['40001', '40P01', '57P01', '57P03', '08006', '53300'])
      expect(classifyBillingFailure(Object.assign(new Error('x'), { code }))).toBe('transient');
    expect(classifyBillingFailure(new Error('Connection is closed.'))).toBe('transient');
    expect(classifyBillingFailure(new TypeError('cannot read properties of undefined'))).toBe('permanent');
  });
});
