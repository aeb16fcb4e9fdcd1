import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@tollgate/logger';
import { createSpendStore } from '@tollgate/spend';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  keyHeaders,
  registerTestKey,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';
import { loadConfig } from '../config';
import { createUsageRecorder } from '../usage/usage.recorder';
import { createAlerts } from './alerts';
import { createThresholdHook } from './threshold-hook';

/** A local webhook receiver: every request with its headers and body; answers `status()`. */
interface Receiver {
  url: string;
  got: Array<{ headers: IncomingMessage['headers']; body: string }>;
  server: Server;
}
async function startReceiver(status: (body: string) => number): Promise<Receiver> {
  const got: Receiver['got'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.statusCode = status(body);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, server };
}

let s: TestBillingStack;
const ACTING_USER = randomUUID();
let receiver: Receiver;
/** Answers 503 to this many messages whose body holds `failing.marker`. */
const failing = { marker: '-', left: 0 };
beforeAll(async () => {
  s = await startTestBilling({
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1',
    WEBHOOK_POLL_MS: '50',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_RETRY_MAX_MS: '200',
  });
  await s.billing.consumer?.close(); // the recorder is driven directly
  receiver = await startReceiver((body) => (body.includes(failing.marker) && failing.left-- > 0 ? 503 : 204));
});
afterAll(async () => {
  receiver?.server.close();
  await s.cleanup();
});

const api = async (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${s.billing.url}${path}`, {
    method: init.method ?? 'GET',
    // The dashboard names the user acting on every call (billing's audit log of endpoint changes).
    headers: { ...(await serviceHeaders('dashboard')), 'x-tollgate-actor-user': ACTING_USER },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

async function endpoint(accountId: string, body: Record<string, unknown> = {}) {
  const res = await api(`/internal/accounts/${accountId}/webhooks`, {
    method: 'POST',
    body: { url: receiver.url, ...body },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { data: { id: string; secret: string } }).data;
}

const alertsOf = (scopeId: string) =>
  s.billing.db
    .selectFrom('billing.alerts')
    .select(['scope', 'period', 'threshold', 'payload'])
    .where('scope_id', '=', scopeId)
    .orderBy('period')
    .orderBy('threshold')
    .execute();

const spendEvent = (accountId: string, keyId: string, cost: string, at = new Date().toISOString()) =>
  usageEvent({ account_id: accountId, key_id: keyId, cost, finished_at: at, started_at: at });

describe('threshold alerts decided at commit (outbox)', () => {
  it('writes each threshold once per period: redelivery and a second worker add none, a new period alerts again', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    registerTestKey({ keyId, accountId, limit: '1', limitReset: 'daily' });
    await endpoint(accountId);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    const first = [
      spendEvent(accountId, keyId, '0.3', yesterday),
      spendEvent(accountId, keyId, '0.3', yesterday),
    ];
    await s.billing.recorder.record(first);
    await s.billing.recorder.record(first); // redelivered: nothing new
    const day = `d${yesterday.slice(0, 10)}`;
    expect((await alertsOf(keyId)).map((a) => [a.period, a.threshold])).toEqual([[day, '50']]);

    // A second billing worker (its own recorder and alert hook, same database) commits at the same
    // time as the first: both batches pass 80 % and 100 %, one alert each.
    const config = loadConfig({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' });
    const other = createUsageRecorder({
      db: s.billing.db,
      spend: createSpendStore(s.billing.redis, { prefix: s.config.REDIS_PREFIX }),
      logger: createLogger({ name: 't', level: 'silent' }),
      clock: () => new Date(),
      alerts: createAlerts({
        config,
        db: s.billing.db,
        owners: {
          current: async () => [
            {
              id: keyId,
              accountId,
              scope: 'inference',
              disabled: false,
              revoked: false,
              expiresAt: null,
              limit: '1',
              limitReset: 'daily',
            },
          ],
        } as never,
        logger: createLogger({ name: 't', level: 'silent' }),
        clock: () => new Date(),
      }).hook,
    });
    await Promise.all([
      s.billing.recorder.record([spendEvent(accountId, keyId, '0.5', yesterday)]),
      other.record([spendEvent(accountId, keyId, '0.5', yesterday)]),
    ]);
    expect((await alertsOf(keyId)).map((a) => a.threshold)).toEqual(['100', '50', '80']);

    // The next day is a new period: 50 % alerts again.
    const today = new Date().toISOString();
    await s.billing.recorder.record([spendEvent(accountId, keyId, '0.6', today)]);
    const all = (await alertsOf(keyId)).map((a) => [a.period, a.threshold]);
    expect(all).toEqual([
      [day, '100'],
      [day, '50'],
      [day, '80'],
      [`d${today.slice(0, 10)}`, '50'],
    ]);
    const fifty = (await alertsOf(keyId)).find((a) => a.threshold === '50');
    expect(fifty?.payload).toMatchObject({
      type: 'spend.threshold',
      data: {
        scope: 'key',
        key_id: keyId,
        limit: '1',
        threshold_percent: 50,
        spend: '0.6',
        limit_reset: 'daily',
      },
    });
  });

  it('decides nothing for accounts without an endpoint, keys without a limit, or another period kind', async () => {
    const accountId = randomUUID();
    const [unlimited, monthly] = [randomUUID(), randomUUID()];
    registerTestKey({ keyId: unlimited, accountId });
    registerTestKey({ keyId: monthly, accountId, limit: '1', limitReset: 'monthly' });
    const bare = randomUUID();
    registerTestKey({ keyId: bare, accountId: randomUUID(), limit: '0.1', limitReset: null });
    await endpoint(accountId, { thresholds: [10] });
    await s.billing.recorder.record([
      spendEvent(accountId, unlimited, '5'),
      spendEvent(accountId, monthly, '0.2'),
      spendEvent(randomUUID(), bare, '1'),
    ]);
    expect(await alertsOf(unlimited)).toEqual([]);
    expect(await alertsOf(bare)).toEqual([]);
    const month = `m${new Date().toISOString().slice(0, 7)}`;
    expect((await alertsOf(monthly)).map((a) => [a.period, a.threshold])).toEqual([[month, '10']]);
  });

  it('alerts on prepaid credits: thresholds of the credits and credits left below the low amount, again after a top-up', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    registerTestKey({ keyId, accountId });
    const grant = async (amount: string) => {
      const res = await fetch(`${s.billing.url}/internal/accounts/${accountId}/credits`, {
        method: 'POST',
        headers: await serviceHeaders('admin'),
        body: JSON.stringify({ amount }),
      });
      expect(res.status).toBe(201);
    };
    await grant('10');
    await endpoint(accountId, { thresholds: [50, 90], low_credit: 2 });
    await s.billing.recorder.record([spendEvent(accountId, keyId, '6')]);
    await s.billing.recorder.record([spendEvent(accountId, keyId, '2.5')]);
    const first = (await alertsOf(accountId)).map((a) => [a.period, a.threshold]);
    expect(first).toEqual([
      ['credits-v1', '50'],
      ['credits-v1', 'low_credit:2'],
    ]);
    await grant('10'); // a top-up re-arms: 8.5 of 20 is below 50 %, 11.5 left
    await s.billing.recorder.record([spendEvent(accountId, keyId, '10')]); // 18.5 of 20: 92.5 %, 1.5 left
    const second = (await alertsOf(accountId)).filter((a) => a.period === 'credits-v2');
    expect(second.map((a) => a.threshold)).toEqual(['50', '90', 'low_credit:2']);
    expect(second.find((a) => a.threshold === 'low_credit:2')?.payload).toMatchObject({
      type: 'credits.low',
      data: { credits: '20', spend: '18.5', remaining: '1.5', low_credit: '2' },
    });
  });
});

describe('team thresholds', () => {
  it("alerts on a team's limit from the team spend the commit returned, once per period", async () => {
    const [accountId, keyId, teamId] = [randomUUID(), randomUUID(), randomUUID()];
    await endpoint(accountId);
    // The keys service's answer for the key: no limit of its own, a team with 2 USD a month.
    const hook = createThresholdHook({
      clock: () => new Date(),
      keyLimits: async () =>
        new Map([
          [
            keyId,
            { limit: null, limitReset: null, teamId, teamLimit: '2', teamLimitReset: 'monthly' as const },
          ],
        ]),
    });
    const month = `m${new Date().toISOString().slice(0, 7)}`;
    const commit = (delta: string, total: string) =>
      s.billing.db.transaction().execute(async (trx) =>
        hook.decide(
          trx,
          await hook.prepare(s.billing.db, [spendEvent(accountId, keyId, delta)]),
          {
            keySpend: [],
            accountUsage: [],
            teamSpend: [{ team_id: teamId, account_id: accountId, period: month, amount: delta }],
          },
          { keys: [], accounts: [], teams: [{ team_id: teamId, period: month, amount: total }] },
        ),
      );
    expect(await commit('1.6', '1.6')).toBe(2); // 80 %: 50 and 80, one delivery each
    expect(await commit('0', '1.6')).toBe(0); // a redelivery adds nothing
    expect(await commit('0.4', '2')).toBe(1); // 100 %
    const alerts = await alertsOf(teamId);
    expect(alerts.map((a) => [a.scope, a.period, a.threshold])).toEqual([
      ['team', month, '100'],
      ['team', month, '50'],
      ['team', month, '80'],
    ]);
    expect(alerts[0]?.payload).toMatchObject({
      data: { scope: 'team', team_id: teamId, limit: '2', spend: '2' },
    });
  });
});

describe('team thresholds through the recorder', () => {
  it("alerts once per threshold of a team's limit as its keys' committed spend passes it", async () => {
    const [accountId, teamId, k1, k2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    for (const keyId of [k1, k2])
      registerTestKey({ keyId, accountId, teamId, teamLimit: '1', teamLimitReset: 'daily' });
    await endpoint(accountId);
    const ev = (keyId: string, cost: string) => ({ ...spendEvent(accountId, keyId, cost), team_id: teamId });
    const first = [ev(k1, '0.3'), ev(k2, '0.3')];
    await s.billing.recorder.record(first);
    await s.billing.recorder.record(first); // redelivered
    await s.billing.recorder.record([ev(k2, '0.45')]);
    const day = `d${new Date().toISOString().slice(0, 10)}`;
    expect((await alertsOf(teamId)).map((a) => [a.scope, a.period, a.threshold])).toEqual([
      ['team', day, '100'],
      ['team', day, '50'],
      ['team', day, '80'],
    ]);
    expect(await alertsOf(k1)).toEqual([]); // the keys have no limit of their own
  });
});

describe('delivery from the outbox (Standard Webhooks)', () => {
  it('delivers signed messages, retries a failing receiver with backoff and logs every attempt', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    registerTestKey({ keyId, accountId, limit: '1', limitReset: null });
    const { id, secret } = await endpoint(accountId, { thresholds: [50] });
    Object.assign(failing, { marker: keyId, left: 2 });
    await s.billing.recorder.record([spendEvent(accountId, keyId, '0.7')]);
    const mine = () => receiver.got.filter((g) => g.body.includes(keyId));
    await vi.waitFor(() => expect(mine().length).toBe(3), { timeout: 10_000, interval: 50 });
    const wh = new Webhook(secret);
    for (const g of mine()) {
      const payload = wh.verify(g.body, g.headers as Record<string, string>) as { type: string };
      expect(payload.type).toBe('spend.threshold');
    }
    expect(new Set(mine().map((g) => g.headers['webhook-id'])).size).toBe(1); // one message, retried
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        mine()[0]?.body ?? '',
        mine()[0]?.headers as Record<string, string>,
      ),
    ).toThrow();

    // The receiver has the third attempt before the worker logs it: wait for the log, not the receipt.
    type Attempts = {
      data: Array<{ attempt: number; status_code: number; latency_ms: number; delivery_status: string }>;
    };
    const { data } = await vi.waitFor(
      async () => {
        const log = (await (
          await api(`/internal/accounts/${accountId}/webhooks/${id}/deliveries`)
        ).json()) as Attempts;
        expect([log.data.length, log.data[0]?.delivery_status]).toEqual([3, 'delivered']);
        return log;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(data.map((a) => [a.attempt, a.status_code])).toEqual([
      [3, 204],
      [2, 503],
      [1, 503],
    ]);
    expect(data.every((a) => a.delivery_status === 'delivered' && a.latency_ms >= 0)).toBe(true);
  });

  it('sends a test message on request and logs it', async () => {
    const accountId = randomUUID();
    const { id, secret } = await endpoint(accountId);
    const res = await api(`/internal/accounts/${accountId}/webhooks/${id}/test`, { method: 'POST' });
    expect(res.status, await res.clone().text()).toBe(200);
    const { data } = (await res.json()) as { data: { status_code: number; type: string } };
    expect(data).toMatchObject({ status_code: 204, type: 'webhook.test' });
    const got = receiver.got.find((g) => g.body.includes(id));
    expect(new Webhook(secret).verify(got?.body ?? '', got?.headers as Record<string, string>)).toMatchObject(
      {
        type: 'webhook.test',
      },
    );
  });
});

describe('webhook endpoints (management API and dashboard routes)', () => {
  it('shows the secret once, stores it encrypted, and refuses private addresses', async () => {
    const accountId = randomUUID();
    const keyId = randomUUID();
    const mgmt = {
      ...(await keyHeaders({ keyId, accountId, scope: 'management' })),
      'content-type': 'application/json',
    };
    const created = await fetch(`${s.billing.url}/webhooks`, {
      method: 'POST',
      headers: mgmt,
      body: JSON.stringify({ url: receiver.url, low_credit: 1.5 }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { data } = (await created.json()) as {
      data: { id: string; secret: string; thresholds: number[]; low_credit: string };
    };
    expect(data.secret).toMatch(/^whsec_/);
    expect(data).toMatchObject({ thresholds: [50, 80, 100], low_credit: '1.5' });
    const listed = await (await fetch(`${s.billing.url}/webhooks`, { headers: mgmt })).text();
    expect(listed).toContain(data.id);
    expect(listed).not.toContain('secret');
    const row = await s.billing.db
      .selectFrom('billing.webhook_endpoints')
      .select('secret_ciphertext')
      .where('id', '=', data.id)
      .executeTakeFirstOrThrow();
    expect(row.secret_ciphertext.includes(Buffer.from(data.secret))).toBe(false);
    expect(row.secret_ciphertext.includes(Buffer.from(data.secret.slice(6), 'base64'))).toBe(false);

    for (const url of [
      'http://169.254.169.254/latest',
      'http://10.1.2.3/',
      'http://[::1]:8080/',
      'ftp://example.com/',
      'http://user:pw@127.0.0.1/',
    ]) {
      const res = await fetch(`${s.billing.url}/webhooks`, {
        method: 'POST',
        headers: mgmt,
        body: JSON.stringify({ url }),
      });
      expect(res.status, url).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^url: /);
    }
    const bad = await fetch(`${s.billing.url}/webhooks`, {
      method: 'POST',
      headers: mgmt,
      body: JSON.stringify({ url: receiver.url, thresholds: [0, 150] }),
    });
    expect(bad.status).toBe(400);
    const inference = {
      ...(await keyHeaders({ keyId: randomUUID(), accountId })),
      'content-type': 'application/json',
    };
    expect((await fetch(`${s.billing.url}/webhooks`, { headers: inference })).status).toBe(403);
    // Another account's webhook is not found.
    const foreign = await api(`/internal/accounts/${randomUUID()}/webhooks/${data.id}`, {
      method: 'PATCH',
      body: { enabled: false },
    });
    expect(foreign.status).toBe(404);
    const del = await fetch(`${s.billing.url}/webhooks/${data.id}`, { method: 'DELETE', headers: mgmt });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ data: { id: data.id, deleted: true } });
  });

  it('refuses to start in production without its own secret key', async () => {
    const production = { ...loadConfig({}), NODE_ENV: 'production' as const };
    const deps = {
      db: s.billing.db,
      owners: {} as never,
      logger: createLogger({ name: 't', level: 'silent' }),
      clock: () => new Date(),
    };
    expect(() => createAlerts({ ...deps, config: production })).toThrow(/WEBHOOK_SECRET_KEY is required/);
    const dev = { ...production, WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
    expect(() => createAlerts({ ...deps, config: dev })).toThrow(/WEBHOOK_SECRET_KEY is required/);
    const own = createAlerts({
      ...deps,
      config: { ...production, WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64') },
    });
    await own.close();
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: 'c2hvcnQ=' })).toThrow(/WEBHOOK_SECRET_KEY/);
  });
});
