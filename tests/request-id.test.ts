/**
 * One request id finds a request's log lines in every service it crossed: the proxy gives the request
 * a `gen-…` id, sends it on as `x-request-id` (forwarder, key resolver, spend guard all use the shared
 * service client), keys passes it on to billing, and each service logs it as `requestId`.
 */
import { Writable } from 'node:stream';
import { loadConfig as loadBillingConfig, startBilling } from '@tollgate/billing';
import { loadCatalog } from '@tollgate/catalog';
import { usageTopology } from '@tollgate/events';
import { loadConfig as loadKeysConfig, startKeysService } from '@tollgate/keys';
import { createLogger } from '@tollgate/logger';
import { loadConfig as loadProxyConfig, startProxy } from '@tollgate/proxy';
import { createTestAmqp, createTestDatabase, createTestRedis, freePort } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_CATALOG_PATH } from './support/stack';

type Line = Record<string, unknown>;

function captured(name: string) {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n')) if (text) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { lines, logger: createLogger({ name, level: 'debug', destination }) };
}

const logs = { proxy: captured('proxy'), keys: captured('keys'), billing: captured('billing') };
const closers: Array<() => Promise<unknown>> = [];
let origin = '';
let managementKey = '';

beforeAll(async () => {
  const [database, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const amqp = createTestAmqp();
  closers.push(async () => {
    const t = usageTopology(amqp.prefix);
    await Promise.allSettled([
      redis.cleanup(),
      database.drop(),
      amqp.cleanup({ queues: [t.queue, t.deadLetterQueue], exchanges: [t.exchange, t.deadLetterExchange] }),
    ]);
  });
  const common = {
    NODE_ENV: 'test',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    HOST: '127.0.0.1',
    PORT: '0',
  };
  const keysPort = await freePort();
  const billing = await startBilling(
    loadBillingConfig({
      ...common,
      DATABASE_URL: database.url,
      AMQP_URL: amqp.url,
      AMQP_PREFIX: amqp.prefix,
      KEYS_URL: `http://127.0.0.1:${keysPort}`,
    }),
    { logger: logs.billing.logger },
  );
  closers.unshift(() => billing.close());
  const keys = await startKeysService(
    loadKeysConfig({
      ...common,
      PORT: String(keysPort),
      DATABASE_URL: database.url,
      BILLING_URL: billing.url,
    }),
    { logger: logs.keys.logger },
  );
  closers.unshift(() => keys.close());
  const proxy = await startProxy(
    loadProxyConfig({
      ...common,
      AMQP_URL: amqp.url,
      AMQP_PREFIX: amqp.prefix,
      KEYS_URL: keys.url,
      BILLING_URL: billing.url,
      CATALOG_PATH: DEV_CATALOG_PATH,
    }),
    {
      catalog: loadCatalog(DEV_CATALOG_PATH, { PROVIDER_SIM_URL: 'http://127.0.0.1:9' }),
      logger: logs.proxy.logger,
    },
  );
  closers.unshift(() => proxy.close());
  origin = proxy.url;
  const account = await keys.runtime.accounts.create({ slug: 'rid', name: 'rid' });
  const created = await keys.runtime.keys.create(account.id, {
    name: 'ops',
    scope: 'management',
    limit: null,
    limitReset: null,
  });
  managementKey = created.key;
});

afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
});

const linesWith = (lines: Line[], id: string) => lines.filter((l) => l.requestId === id);

describe('request id across services', () => {
  it('appears on the log lines of proxy, keys and billing for one GET /keys', async () => {
    const res = await fetch(`${origin}/api/v1/keys`, {
      headers: { authorization: `Bearer ${managementKey}`, 'x-request-id': 'chosen-by-the-client' },
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const id = res.headers.get('x-request-id') ?? '';
    // The public edge never takes the client's id (it becomes a generation id).
    expect(id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    // GET /keys: proxy → keys (forwarded), keys → billing (usage figures of the listed keys).
    for (const [service, log] of Object.entries(logs)) {
      await expect
        .poll(() => linesWith(log.lines, id).length, { message: `${service} logged ${id}` })
        .toBeGreaterThan(0);
    }
    expect(linesWith(logs.billing.lines, id)).toContainEqual(
      expect.objectContaining({ path: '/internal/usage/keys', status: 200 }),
    );
    expect(linesWith(logs.keys.lines, id)).toContainEqual(
      expect.objectContaining({ path: '/keys', status: 200 }),
    );
    // One field name everywhere: no service logs the id under another name.
    for (const log of Object.values(logs)) {
      expect(log.lines.filter((l) => 'reqId' in l)).toEqual([]);
    }
  });

  it('an internal service keeps the id it was given and echoes it', async () => {
    const res = await fetch(`${origin}/api/v1/credits`, {
      headers: { authorization: `Bearer ${managementKey}` },
    });
    const id = res.headers.get('x-request-id') ?? '';
    expect(res.status, await res.text()).toBe(200);
    await expect.poll(() => linesWith(logs.billing.lines, id).length).toBeGreaterThan(0);
    expect(linesWith(logs.billing.lines, id)[0]).toMatchObject({ path: '/credits' });
  });
});
