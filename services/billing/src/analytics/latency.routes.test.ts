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
// 100 fast requests of model A (TTFT 100..199 ms, total 1 s, 50 tokens), 10 slow ones of model B with
// TTFT 2 s, total 6 s, 100 tokens; 2 of B ended with an upstream error.
const fast = Array.from({ length: 100 }, (_, i) =>
  usageEvent({
    account_id: account,
    key_id: key,
    model: 'openai/gpt-4o-mini',
    latency_ms: 100 + i,
    generation_time_ms: 1000,
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
    tokens: { prompt: 10, completion: 100, cached: 0, cache_write: 0, reasoning: 0 },
    error: i < 2 ? { code: 502, message: 'upstream failed mid-stream' } : null,
    finished_at: minute(i),
  }),
);

beforeAll(async () => {
  s = await startTestBilling();
  await s.billing.recorder.record([...fast.slice(0, 50), ...slow]);
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
    // 5000 tokens over 100 × (1000 − TTFT) ms = 85.05 s of generation.
    expect(a.tokens_per_second).toBeCloseTo(58.8, 1);
    expect(b).toMatchObject({ group: 'openai/gpt-4o', requests: 10, errors: 2, error_rate: 0.2 });
    expect(b.ttft_ms.avg).toBe(2000);
    expect(b.ttft_ms.p99).toBeGreaterThan(1600);
    expect(b.ttft_ms.p99).toBeLessThan(2400);
    expect(b.tokens_per_second).toBe(25);
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
