import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';

/**
 * Issue 23: X-Title is part of the roll-up keys. Distinct titles per account and UTC day are bounded
 * (ANALYTICS_APPS_PER_DAY, 3 here), the rest roll up as "(other)"; grouped analytics answer the top
 * `limit` groups by cost with an offset, never every title.
 */
let s: TestBillingStack;
const account = randomUUID();
const key = randomUUID();
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;

const at = (day: number, minute: number) => new Date(Date.UTC(2026, 10, day, 10, minute)).toISOString();
// Day 20: eight distinct titles (costs 1..8 cents), two requests without one; day 21: two titles.
const day20 = Array.from({ length: 8 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    app: `app-${i}`,
    cost: `0.0${i + 1}`,
    finished_at: at(20, i),
  }),
);
const untitled = [1, 2].map((i) =>
  usageEvent({ account_id: account, key_id: key, app: null, cost: '0.5', finished_at: at(20, 30 + i) }),
);
const day21 = ['app-7', 'late'].map((app, i) =>
  usageEvent({ account_id: account, key_id: key, app, cost: '0.02', finished_at: at(21, i) }),
);

beforeAll(async () => {
  s = await startTestBilling({ ANALYTICS_APPS_PER_DAY: '3' });
  // Two batches: the bound holds across batches (the admitted titles are in the database).
  await s.billing.recorder.record(day20.slice(0, 2));
  await s.billing.recorder.record([...day20.slice(2), ...untitled, ...day21]);
});
afterAll(async () => {
  await s.cleanup();
});

async function usage(query: string) {
  const res = await fetch(`${s.billing.url}/internal/accounts/${account}/usage?${query}`, {
    headers: await serviceHeaders('dashboard'),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Json, text };
}

describe('X-Title bounds', () => {
  it('gives the first ANALYTICS_APPS_PER_DAY titles of a day their own rows; the rest are "(other)", to the cent', async () => {
    const r = await usage('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=total&group_by=app');
    expect(r.status, r.text).toBe(200);
    const rows = r.body.data.rows.map((x: Json) => [x.group, x.requests, x.cost]);
    // app-0 and app-1 came first; app-2 was the third distinct title; the other five share a row.
    expect(rows).toEqual([
      [null, 2, '1'],
      ['(other)', 5, '0.3'],
      ['app-2', 1, '0.03'],
      ['app-1', 1, '0.02'],
      ['app-0', 1, '0.01'],
    ]);
    const total = await usage('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=total');
    expect(total.body.data.rows[0]).toMatchObject({ requests: 10, cost: '1.36' });
    // A new day starts a new share: app-7 has a row of its own on the 21st.
    const next = await usage(
      'from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z&granularity=total&group_by=app',
    );
    expect(next.body.data.rows.map((x: Json) => x.group).sort()).toEqual(['app-7', 'late']);
  });

  it('the generation records keep every title', async () => {
    const res = await fetch(`${s.billing.url}/internal/accounts/${account}/generations?app=app-6`, {
      headers: await serviceHeaders('dashboard'),
    });
    expect(((await res.json()) as Json).data).toHaveLength(1);
  });

  it('answers the top `limit` groups by cost, then the next ones by offset', async () => {
    const range = 'from=2026-11-20T00:00:00Z&to=2026-11-22T00:00:00Z&granularity=day&group_by=app';
    const first = await usage(`${range}&limit=2`);
    expect(new Set(first.body.data.rows.map((x: Json) => x.group))).toEqual(new Set([null, '(other)']));
    expect(first.body.data.next_offset).toBe(2);
    const seen = new Set<string | null>();
    let offset: number | null = 0;
    while (offset !== null) {
      const page = await usage(`${range}&limit=2&offset=${offset}`);
      for (const x of page.body.data.rows) seen.add(x.group);
      offset = page.body.data.next_offset;
    }
    expect(seen.size).toBe(7); // null, (other), app-0..2, app-7, late
    expect((await usage(`${range}&limit=1001`)).status).toBe(400);
  });
});
