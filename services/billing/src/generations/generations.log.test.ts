import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';

/** The request log the dashboard pages through: server-side sort, offset pages, prefixes, range. */
let s: TestBillingStack;
const account = randomUUID();
const key = randomUUID();
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;

// 60 records one minute apart; the OLDEST is the most expensive and the slowest.
const events = Array.from({ length: 60 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    model: i % 2 === 0 ? 'openai/gpt-4o-mini' : 'anthropic/claude-3-haiku',
    app: i % 3 === 0 ? 'Café bot 100%' : 'batch_job',
    cost: i === 0 ? '9.5' : `0.00${(i % 9) + 1}`,
    tokens: { prompt: 10 + i, completion: 20, cached: 0, cache_write: 0, reasoning: 0 },
    latency_ms: i === 0 ? 9000 : 100 + i,
    // Every fourth record belongs to one Claude Code session.
    ...(i % 4 === 0
      ? { api_type: 'messages' as const, session_id: 'e1e64ac6-255c-4f70-b8a8-4b90caf5f347' }
      : {}),
    finished_at: new Date(Date.UTC(2026, 10, 20, 10, i)).toISOString(),
  }),
);

beforeAll(async () => {
  s = await startTestBilling();
  await s.billing.recorder.record(events);
});
afterAll(async () => {
  await s.cleanup();
});

async function list(query: string) {
  const res = await fetch(`${s.billing.url}/internal/accounts/${account}/generations?${query}`, {
    headers: await serviceHeaders('dashboard'),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Json, text };
}

describe('the request log', () => {
  it('sorts by cost over every record, not the loaded page, and pages by offset', async () => {
    const first = await list('sort=cost&order=desc&limit=10');
    expect(first.status, first.text).toBe(200);
    expect(first.body.data[0].id).toBe(events[0]!.id);
    expect(first.body.data[0].cost).toBe('9.5');
    expect(first.body.next_offset).toBe(10);
    expect(first.body.next_before).toBeNull();
    const ids = new Set<string>();
    let offset: number | null = 0;
    while (offset !== null) {
      const page = await list(`sort=cost&order=desc&limit=25&offset=${offset}`);
      for (const g of page.body.data) ids.add(g.id);
      offset = page.body.next_offset;
    }
    expect(ids.size).toBe(60); // no overlap, nothing skipped
    const cheap = await list('sort=cost&order=asc&limit=1');
    expect(Number(cheap.body.data[0].cost)).toBe(0.001);
  });

  it('sorts by tokens and latency', async () => {
    expect((await list('sort=tokens&limit=1')).body.data[0].id).toBe(events[59]!.id);
    expect((await list('sort=latency&limit=1')).body.data[0].id).toBe(events[0]!.id);
  });

  it('matches model, app and id by prefix, literally', async () => {
    const claude = await list('model_prefix=anthropic/&limit=200');
    expect(claude.body.data).toHaveLength(30);
    const cafe = await list(`app_prefix=${encodeURIComponent('Café bot 1')}&limit=200`);
    expect(cafe.body.data).toHaveLength(20);
    // % and _ are characters, not wildcards.
    expect((await list('app_prefix=batch%5F&limit=200')).body.data).toHaveLength(40);
    expect((await list('app_prefix=batch%25&limit=200')).body.data).toHaveLength(0);
    const id = events[17]!.id;
    const byId = await list(`id_prefix=${id.slice(0, id.length - 2)}`);
    expect(byId.body.data.map((g: Json) => g.id)).toContain(id);
  });

  it('lists one client session’s records (session_id), with the session and the door on each', async () => {
    const r = await list('session_id=e1e64ac6-255c-4f70-b8a8-4b90caf5f347&limit=200');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toHaveLength(15);
    for (const g of r.body.data)
      expect(g).toMatchObject({ session_id: 'e1e64ac6-255c-4f70-b8a8-4b90caf5f347', api_type: 'messages' });
    expect((await list('session_id=other&limit=200')).body.data).toHaveLength(0);
    expect((await list(`session_id=${'x'.repeat(129)}`)).status).toBe(400);
  });

  it('keeps to a date range', async () => {
    const r = await list('from=2026-11-20T10:10:00Z&to=2026-11-20T10:20:00Z&limit=200');
    expect(r.body.data).toHaveLength(10);
    expect(r.body.data[0].id).toBe(events[19]!.id);
  });

  it('refuses a keyset cursor with another order, and bad values, with 400', async () => {
    for (const q of [
      `sort=cost&before=${events[3]!.id}`,
      'sort=color',
      'order=up',
      'offset=-1',
      'offset=20000',
      'id_prefix=ge',
      'from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z',
    ]) {
      const r = await list(q);
      expect(r.status, q).toBe(400);
    }
  });
});

describe('sessions', () => {
  const acct = randomUUID();
  const at = (m: number) => new Date(Date.UTC(2026, 10, 21, 9, m)).toISOString();
  beforeAll(async () => {
    await s.billing.recorder.record([
      usageEvent({ account_id: acct, session_id: 'sess-a', cost: '0.25', finished_at: at(1) }),
      usageEvent({
        account_id: acct,
        session_id: 'sess-a',
        cost: '0.5',
        model: 'openai/gpt-4o',
        finished_at: at(2),
      }),
      usageEvent({ account_id: acct, session_id: 'sess-b', cost: '1', finished_at: at(3) }),
      usageEvent({ account_id: acct, cost: '7', finished_at: at(4) }),
    ]);
  });
  const get = async (path: string) => {
    const res = await fetch(`${s.billing.url}/internal/accounts/${acct}/${path}`, {
      headers: await serviceHeaders('dashboard'),
    });
    return (await res.json()) as Json;
  };

  it('lists sessions with their totals, most recently active first, and filters the log by session', async () => {
    const r = await get('sessions');
    expect(r.data).toEqual([
      expect.objectContaining({ session_id: 'sess-b', requests: 1, cost: '1' }),
      expect.objectContaining({
        session_id: 'sess-a',
        requests: 2,
        cost: '0.75',
        models: ['openai/gpt-4o', 'openai/gpt-4o-mini'],
      }),
    ]);
    expect(r.next_offset).toBeNull();
    expect((await get('sessions?limit=1')).next_offset).toBe(1);
    expect((await get('generations?session_id=sess-a')).data).toHaveLength(2);
    expect((await get('sessions?from=2026-11-21T09:03:00Z')).data.map((x: Json) => x.session_id)).toEqual([
      'sess-b',
    ]);
  });
});
