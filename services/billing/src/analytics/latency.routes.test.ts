import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';

/** Issue 28: latency and errors as data — percentiles per model from the roll-ups' histograms. */
let s: TestBillingStack;
const account = randomUUID();
const key = randomUUID();
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;

const minute = (i: number) => new Date(Date.UTC(2026, 10, 20, 10, i % 60, Math.floor(i / 60))).toISOString();
// 100 fast streamed requests of model A (TTFT 100..199 ms, total 1 s, 50 tokens, gateway overhead
// 300..399 µs on 80 of them: 20 come from a proxy before the overhead existed), 10 slow non-streamed
// ones of model B with TTFT 2 s, total 6 s, 100 tokens, overhead 5 ms; 2 of B ended with an upstream error.
const fast = Array.from({ length: 100 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    model: 'openai/gpt-4o-mini',
    streamed: true,
    latency_ms: 100 + i,
    generation_time_ms: 1000,
    ...(i < 80 ? { gateway_overhead_us: 300 + i } : {}),
    tokens: { prompt: 10, completion: 50, cached: 0, cache_write: 0, reasoning: 0 },
    finished_at: minute(i),
  }),
);
const slow = Array.from({ length: 10 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    model: 'openai/gpt-4o',
    latency_ms: 2000,
    generation_time_ms: 6000,
    gateway_overhead_us: 5000,
    tokens: { prompt: 10, completion: 100, cached: 0, cache_write: 0, reasoning: 0 },
    error: i < 2 ? { code: 502, message: 'upstream failed mid-stream' } : null,
    finished_at: minute(i),
  }),
);

// The day before: 5 records of a proxy before the overhead existed (no gateway_overhead_us).
const old = Array.from({ length: 5 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    model: 'openai/gpt-4o-mini',
    finished_at: new Date(Date.UTC(2026, 10, 19, 10, i)).toISOString(),
  }),
);

beforeAll(async () => {
  s = await startTestBilling();
  await s.billing.recorder.record([...fast.slice(0, 50), ...slow, ...old]);
  await s.billing.recorder.record(fast.slice(50)); // histograms add up across batches
});
afterAll(async () => {
  await s.cleanup();
});

async function latency(query: string) {
  const res = await fetch(`${s.billing.url}/internal/accounts/${account}/latency?${query}`, {
    headers: await serviceHeaders('dashboard'),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Json, text };
}

describe('latency as data', () => {
  it('answers time to first token and total latency percentiles, errors and tokens/s per model', async () => {
    const r = await latency('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&group_by=model');
    expect(r.status, r.text).toBe(200);
    const [a, b] = r.body.data.rows;
    expect(a).toMatchObject({ group: 'openai/gpt-4o-mini', requests: 100, errors: 0, error_rate: 0 });
    expect(a.ttft_ms.avg).toBe(150); // exact: sums
    expect(a.ttft_ms.p50).toBeGreaterThan(120);
    expect(a.ttft_ms.p50).toBeLessThan(180); // exact 149
    expect(a.total_ms.p90).toBeGreaterThan(800);
    expect(a.total_ms.p90).toBeLessThan(1200); // exact 1000
    // Streamed: 5000 tokens over 100 × (1000 − TTFT) ms = 85.05 s of generation.
    expect(a.tokens_per_second).toBeCloseTo(58.8, 1);
    // Overhead over the 80 records that carry it: exact average 339.5 µs, percentiles within ~20 %.
    expect(a.overhead_requests).toBe(80);
    expect(a.gateway_overhead_ms.avg).toBe(0.34);
    expect(a.gateway_overhead_ms.p50).toBeGreaterThan(0.27);
    expect(a.gateway_overhead_ms.p50).toBeLessThan(0.41);
    expect(a.gateway_overhead_ms.p99).toBeLessThan(0.48);
    expect(b).toMatchObject({ group: 'openai/gpt-4o', requests: 10, errors: 2, error_rate: 0.2 });
    expect(b.ttft_ms.avg).toBe(2000);
    expect(b.ttft_ms.p99).toBeGreaterThan(1600);
    expect(b.ttft_ms.p99).toBeLessThan(2400);
    // Not streamed: the whole 6 s count as generation (1000 tokens over 60 s).
    expect(b.tokens_per_second).toBeCloseTo(16.7, 1);
    expect(b.overhead_requests).toBe(10);
    expect(b.gateway_overhead_ms).toMatchObject({ avg: 5 });
    expect(b.gateway_overhead_ms.p90).toBeGreaterThan(4);
    expect(b.gateway_overhead_ms.p90).toBeLessThan(6.25); // its bucket's upper bound
  });

  it('says null, not 0, for the overhead of records that never carried one', async () => {
    const r = await latency('from=2026-11-19T00:00:00Z&to=2026-11-20T00:00:00Z&group_by=model');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([
      expect.objectContaining({
        group: 'openai/gpt-4o-mini',
        requests: 5,
        overhead_requests: 0,
        gateway_overhead_ms: { avg: null, p50: null, p90: null, p99: null },
      }),
    ]);
  });

  it('keeps the overhead and tokens per second in the generation record', async () => {
    const rows = await s.billing.db
      .selectFrom('billing.generations')
      .select(['id', 'gateway_overhead_us'])
      .where('id', 'in', [fast[0]!.id, fast[99]!.id])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r.gateway_overhead_us]));
    expect(byId.get(fast[0]!.id)).toBe('300');
    expect(byId.get(fast[99]!.id)).toBeNull();
  });

  it('groups by provider or not at all, and refuses bad input with 400', async () => {
    const all = await latency('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&group_by=none');
    expect(all.body.data.rows).toEqual([expect.objectContaining({ group: null, requests: 110, errors: 2 })]);
    expect((await latency('from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&group_by=app')).status).toBe(
      400,
    );
    expect((await latency('from=2026-01-01T00:00:00Z&to=2026-11-21T00:00:00Z')).status).toBe(400);
  });
});
