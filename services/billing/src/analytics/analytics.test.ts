import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  keyHeaders,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';

let s: TestBillingStack;
const now = new Date('2026-11-20T12:30:00.000Z');
const account = randomUUID();
const other = randomUUID();
const keyA = randomUUID();
const keyB = randomUUID();

beforeAll(async () => {
  s = await startTestBilling({}, { clock: () => now });
});
afterAll(async () => {
  await s.cleanup();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;
async function get(path: string, given?: Record<string, string>) {
  const headers = given ?? (await serviceHeaders('dashboard'));
  const res = await fetch(`${s.billing.url}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Json, text };
}

const usage = (query: string) => get(`/internal/accounts/${account}/usage?${query}`);

describe('hourly roll-ups', () => {
  const events = [
    usageEvent({
      account_id: account,
      key_id: keyA,
      app: 'Chat',
      cost: '0.0000001',
      finished_at: '2026-11-20T10:05:00.000Z',
    }),
    usageEvent({
      account_id: account,
      key_id: keyA,
      app: 'Chat',
      cost: '0.0000002',
      finished_at: '2026-11-20T10:59:59.999Z',
    }),
    usageEvent({
      account_id: account,
      key_id: keyB,
      app: null,
      model: 'openai/gpt-4o',
      cost: '0.25',
      finished_at: '2026-11-20T11:00:00.000Z',
    }),
    usageEvent({
      account_id: account,
      key_id: keyB,
      app: 'Batch',
      provider_name: 'sim-b',
      cost: '1.5',
      finished_at: '2026-11-19T23:10:00.000Z',
    }),
    usageEvent({
      account_id: other,
      key_id: randomUUID(),
      app: 'Chat',
      cost: '100',
      finished_at: '2026-11-20T10:10:00.000Z',
    }),
  ];

  beforeAll(async () => {
    // Every event is delivered twice (redelivery after a lost ack): the roll-ups count it once.
    await s.publish(...events, ...events);
    await vi.waitFor(
      async () => {
        const r = await usage('from=2026-11-19T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=total');
        expect(r.body.data.rows[0]?.requests, r.text).toBe(4);
      },
      { timeout: 10_000, interval: 50 },
    );
    // A later batch with the same ids adds nothing either.
    await s.billing.recorder.record(events);
  });

  it('sums requests, tokens and exact cost per hour, exactly once under redelivery', async () => {
    const r = await usage('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=hour');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([
      {
        bucket: '2026-11-20T10:00:00.000Z',
        group: null,
        requests: 2,
        tokens_prompt: 20,
        tokens_completion: 40,
        tokens_cached: 0,
        tokens_cache_write: 0,
        tokens_reasoning: 0,
        cost: '0.0000003',
      },
      expect.objectContaining({ bucket: '2026-11-20T11:00:00.000Z', requests: 1, cost: '0.25' }),
    ]);
  });

  it('groups by day and by model, app, key and provider', async () => {
    const range = 'from=2026-11-19T00:00:00Z&to=2026-11-21T00:00:00Z';
    const byDay = await usage(`${range}&granularity=day`);
    expect(byDay.body.data.rows.map((x: Json) => [x.bucket, x.requests, x.cost])).toEqual([
      ['2026-11-19T00:00:00.000Z', 1, '1.5'],
      ['2026-11-20T00:00:00.000Z', 3, '0.2500003'],
    ]);
    const byModel = await usage(`${range}&granularity=total&group_by=model`);
    expect(byModel.body.data.rows.map((x: Json) => [x.group, x.cost])).toEqual([
      ['openai/gpt-4o-mini', '1.5000003'],
      ['openai/gpt-4o', '0.25'],
    ]);
    const byApp = await usage(`${range}&granularity=total&group_by=app`);
    expect(byApp.body.data.rows.map((x: Json) => [x.group, x.requests])).toEqual([
      ['Batch', 1],
      [null, 1],
      ['Chat', 2],
    ]);
    const byKey = await usage(`${range}&granularity=total&group_by=key`);
    expect(byKey.body.data.rows.map((x: Json) => [x.group, x.cost])).toEqual([
      [keyB, '1.75'],
      [keyA, '0.0000003'],
    ]);
    const byProvider = await usage(`${range}&granularity=day&group_by=provider`);
    expect(byProvider.body.data.rows.map((x: Json) => [x.bucket.slice(0, 10), x.group])).toEqual([
      ['2026-11-19', 'sim-b'],
      ['2026-11-20', 'sim'],
    ]);
    const filtered = await usage(`${range}&granularity=total&key_id=${keyA}&app=Chat`);
    expect(filtered.body.data.rows[0]).toMatchObject({ requests: 2, cost: '0.0000003' });
  });

  it('groups hours of the whole account by model, app, key and provider (usage_group_hourly)', async () => {
    const range = 'from=2026-11-19T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=hour';
    const rows = async (by: string, filter = '') =>
      (await usage(`${range}&group_by=${by}${filter}`)).body.data.rows.map((x: Json) => [
        x.bucket.slice(11, 13),
        x.group,
        x.requests,
        x.tokens_completion,
        x.cost,
      ]);
    expect(await rows('model')).toEqual([
      ['23', 'openai/gpt-4o-mini', 1, 20, '1.5'],
      ['10', 'openai/gpt-4o-mini', 2, 40, '0.0000003'],
      ['11', 'openai/gpt-4o', 1, 20, '0.25'],
    ]);
    expect((await rows('app')).map((r: Json[]) => [r[0], r[1], r[2]])).toEqual([
      ['23', 'Batch', 1],
      ['10', 'Chat', 2],
      ['11', null, 1],
    ]);
    expect((await rows('key')).map((r: Json[]) => [r[0], r[1], r[4]])).toEqual([
      ['23', keyB, '1.5'],
      ['10', keyA, '0.0000003'],
      ['11', keyB, '0.25'],
    ]);
    expect((await rows('provider')).map((r: Json[]) => [r[0], r[1], r[2]])).toEqual([
      ['23', 'sim-b', 1],
      ['10', 'sim', 2],
      ['11', 'sim', 1],
    ]);
    // A filtered query still reads usage_hourly: the same answer for the same rows.
    expect(await rows('model', '&provider=sim')).toEqual((await rows('model')).slice(1));
    // Every dimension holds each request once (redelivered twice and re-recorded above).
    const { rows: sums } = await sql<{ dimension: string; requests: string; cost: string }>`
      select dimension, sum(requests)::text as requests, sum(cost)::text as cost
      from billing.usage_group_hourly where account_id = ${account}
      group by 1 order by 1`.execute(s.billing.db);
    expect(sums).toEqual(
      ['app', 'key', 'model', 'provider'].map((dimension) => ({
        dimension,
        requests: '4',
        cost: '1.7500003',
      })),
    );
  });

  it("groups one key's hours by model, app and provider (usage_key_group_hourly) and sums them without grouping", async () => {
    const range = 'from=2026-11-19T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=hour';
    const rows = async (query: string) => (await usage(`${range}&${query}`)).body.data.rows;
    const pick = (list: Json[]) =>
      list.map((x: Json) => [x.bucket.slice(8, 13), x.group, x.requests, x.tokens_completion, x.cost]);
    expect(pick(await rows(`group_by=model&key_id=${keyB}`))).toEqual([
      ['19T23', 'openai/gpt-4o-mini', 1, 20, '1.5'],
      ['20T11', 'openai/gpt-4o', 1, 20, '0.25'],
    ]);
    expect(pick(await rows(`group_by=app&key_id=${keyB}`))).toEqual([
      ['19T23', 'Batch', 1, 20, '1.5'],
      ['20T11', null, 1, 20, '0.25'],
    ]);
    expect(pick(await rows(`group_by=provider&key_id=${keyA}`))).toEqual([
      ['20T10', 'sim', 2, 40, '0.0000003'],
    ]);
    expect(pick(await rows(`group_by=none&key_id=${keyB}`))).toEqual([
      ['19T23', null, 1, 20, '1.5'],
      ['20T11', null, 1, 20, '0.25'],
    ]);
    expect(pick(await rows(`group_by=key&key_id=${keyA.toUpperCase()}`))).toEqual([
      ['20T10', keyA, 2, 40, '0.0000003'],
    ]);
    // The same answers as usage_hourly gives (a second filter reads it), every column included.
    for (const by of ['model', 'app', 'provider', 'none', 'key']) {
      for (const key of [keyA, keyB]) {
        const viaHourly = await rows(`group_by=${by}&key_id=${key}&provider=sim`);
        const mine = (await rows(`group_by=${by}&key_id=${key}`)).filter(
          (x: Json) => x.bucket >= '2026-11-20',
        );
        expect(viaHourly.length).toBeGreaterThan(0);
        expect(mine).toEqual(viaHourly);
      }
    }
    // One model alone, by key or not grouped (usage_key_group_hourly's model rows): as usage_hourly.
    let compared = 0;
    for (const by of ['key', 'none']) {
      for (const model of ['openai/gpt-4o', 'openai/gpt-4o-mini']) {
        const m = encodeURIComponent(model);
        const viaHourly = await rows(`group_by=${by}&model=${m}&provider=sim`);
        const mine = (await rows(`group_by=${by}&model=${m}`)).filter((x: Json) => x.bucket >= '2026-11-20');
        compared += viaHourly.length;
        expect(mine).toEqual(viaHourly);
      }
    }
    expect(compared).toBeGreaterThan(0);
    expect(await rows(`group_by=key&model=nope%2Fnope`)).toEqual([]);
    expect(await rows(`group_by=model&key_id=${randomUUID()}`)).toEqual([]);
    // Each dimension holds each of the key's requests once (redeliveries above included).
    const { rows: sums } = await sql<{ key_id: string; dimension: string; requests: string; cost: string }>`
      select key_id::text, dimension, sum(requests)::text as requests, sum(cost)::text as cost
      from billing.usage_key_group_hourly where account_id = ${account}
      group by 1, 2 order by 2, 1`.execute(s.billing.db);
    expect(sums).toEqual(
      ['app', 'model', 'provider'].flatMap((dimension) =>
        [
          { key_id: keyA, requests: '2', cost: '0.0000003' },
          { key_id: keyB, requests: '2', cost: '1.75' },
        ]
          .sort((a, b) => (a.key_id < b.key_id ? -1 : 1))
          .map((k) => ({ key_id: k.key_id, dimension, requests: k.requests, cost: k.cost })),
      ),
    );
  });

  it('never shows another account (the other account is asked for separately)', async () => {
    const r = await get(
      `/internal/accounts/${other}/usage?from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=total`,
    );
    expect(r.body.data.rows).toEqual([expect.objectContaining({ requests: 1, cost: '100' })]);
  });

  it.each([
    ['to=2026-11-21T00:00:00Z', /^from:/],
    ['from=yesterday&to=2026-11-21T00:00:00Z', /^from:/],
    ['from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z', /^to: must be after from/],
    ['from=2026-01-01T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=hour', /^to: range too long/],
    ['from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&group_by=color', /^group_by:/],
    ['from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&key_id=nope', /^key_id:/],
    [
      'from=2026-11-20T00:00:00Z&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z',
      /^from: must be given once/,
    ],
    ['from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&extra=1', /extra/],
  ])('answers 400 for %s', async (query, message) => {
    const r = await usage(query);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(message);
  });

  it('answers 401 without a service token and 400 for a malformed account id', async () => {
    expect(
      (await get(`/internal/accounts/${account}/usage?from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z`, {}))
        .status,
    ).toBe(401);
    const caller = await keyHeaders({ keyId: keyA, accountId: account, scope: 'management' });
    expect((await get(`/internal/accounts/${account}/generations`, caller)).status).toBe(401);
    expect((await get('/internal/accounts/not-a-uuid/credits')).status).toBe(400);
  });

  it('lists generation records newest first with filters and keyset pages', async () => {
    const first = await get(`/internal/accounts/${account}/generations?limit=2`);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((g: Json) => g.finished_at)).toEqual([
      '2026-11-20T11:00:00.000Z',
      '2026-11-20T10:59:59.999Z',
    ]);
    expect(first.body.data[0]).toMatchObject({
      key_id: keyB,
      cost: '0.25',
      model: 'openai/gpt-4o',
      app: null,
    });
    const second = await get(
      `/internal/accounts/${account}/generations?limit=2&before=${first.body.next_before}`,
    );
    expect(second.body.data.map((g: Json) => g.finished_at)).toEqual([
      '2026-11-20T10:05:00.000Z',
      '2026-11-19T23:10:00.000Z',
    ]);
    expect(second.body.next_before).toBeNull();
    const chat = await get(`/internal/accounts/${account}/generations?app=Chat`);
    expect(chat.body.data).toHaveLength(2);
    const noApp = await get(`/internal/accounts/${account}/generations?app=`);
    expect(noApp.body.data.map((g: Json) => g.key_id)).toEqual([keyB]);
    const id = first.body.data[0].id;
    const one = await get(`/internal/accounts/${account}/generations/${id}`);
    expect(one.body.data).toMatchObject({ id, cost: '0.25', upstream_model: 'gpt-4o-mini' });
    expect((await get(`/internal/accounts/${other}/generations/${id}`)).status).toBe(404);
  });
});

describe('credits ledger', () => {
  it('shows the balance and the ledger newest first, paginated', async () => {
    const acct = randomUUID();
    for (const amount of ['10', '2.5', '-1']) {
      const r = await fetch(`${s.billing.url}/internal/accounts/${acct}/credits`, {
        method: 'POST',
        headers: await serviceHeaders('admin'),
        body: JSON.stringify({ amount, note: `grant ${amount}` }),
      });
      expect(r.status).toBe(201);
    }
    const r = await get(`/internal/accounts/${acct}/credits?limit=2`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ total_credits: '11.5', total_usage: '0', remaining: '11.5' });
    expect(r.body.data.ledger.map((e: Json) => e.amount)).toEqual(['-1', '2.5']);
    const next = await get(`/internal/accounts/${acct}/credits?limit=2&before=${r.body.data.next_before}`);
    expect(next.body.data.ledger.map((e: Json) => [e.amount, e.note])).toEqual([['10', 'grant 10']]);
    const bad = await get(`/internal/accounts/${acct}/credits?before=x`);
    expect(bad.status, bad.text).toBe(400);
  });
});

describe('GET /activity (management key, OpenRouter shape)', () => {
  const mgmt = () => keyHeaders({ keyId: randomUUID(), accountId: account, scope: 'management' });

  it('answers daily usage per model for the last 30 completed UTC days (today excluded)', async () => {
    const r = await get('/activity', await mgmt());
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual([
      {
        date: '2026-11-19',
        model: 'openai/gpt-4o-mini',
        model_permaslug: 'openai/gpt-4o-mini',
        endpoint_id: 'sim-b:openai/gpt-4o-mini',
        provider_name: 'sim-b',
        usage: 1.5,
        byok_usage_inference: 0,
        requests: 1,
        prompt_tokens: 10,
        completion_tokens: 20,
        reasoning_tokens: 0,
      },
    ]);
    const byDate = await get('/activity?date=2026-11-19', await mgmt());
    expect(byDate.body.data).toHaveLength(1);
    const byKey = await get(`/activity?api_key_hash=${keyA}`, await mgmt());
    expect(byKey.body.data).toEqual([]);
  });

  it('refuses inference keys (403), today or far dates (400)', async () => {
    const inf = await keyHeaders({ keyId: randomUUID(), accountId: account, scope: 'inference' });
    const r = await get('/activity', inf);
    expect(r.status).toBe(403);
    expect(r.body.error.metadata.required_scope).toBe('management');
    expect((await get('/activity?date=2026-11-20', await mgmt())).status).toBe(400);
    expect((await get('/activity?date=2026-02-30', await mgmt())).status).toBe(400);
    expect((await get('/activity?api_key_hash=abc', await mgmt())).status).toBe(400);
    expect((await get('/activity', {})).status).toBe(401);
  });
});
