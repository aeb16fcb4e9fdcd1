/**
 * Issue 28, latency as data in Chromium, through the real stack with traffic from the official
 * `openai` client: two models answered by the simulator with different times to first token (some
 * streamed, some not). The Usage page's latency section shows per model (and per provider) the
 * requests, time to first token, total latency and the gateway's own overhead as p50 / p90, and
 * tokens per second; the generation detail shows the record's overhead and tokens per second.
 * Screenshots at 1280, 1920 and 390 px (test-results/dashboard/usage-latency-*.png); axe finds no
 * serious violation; the section never makes the page wider than the screen.
 */
import { resolve } from 'node:path';
import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type BrowserStack,
  browserUnavailable,
  SHOTS,
  seriousAxeViolations,
  startBrowserStack,
} from '../support/browser';
import type { DashboardSession, TestDashboard } from '../support/dashboard';
import { MODEL, type Stack } from '../support/stack';

const SLOW = 'openai/gpt-4o';
/** The simulator's delay before the first token, per model (ms). */
const TTFT = { [MODEL]: 20, [SLOW]: 600 } as const;
const PER_MODEL = 6;

let b: BrowserStack;
let stack: Stack;
let dash: TestDashboard;
let page: Page;
let api: DashboardSession;
let lastId = '';
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;

/** One completion through the openai client: streamed or not, the simulator's TTFT per model. */
async function complete(client: OpenAI, model: keyof typeof TTFT, stream: boolean): Promise<string> {
  // `sim` is the simulator's per-request knob; the proxy passes unknown fields through to it.
  const body = {
    model,
    messages: [{ role: 'user' as const, content: 'Count to ten' }],
    max_tokens: 16,
    sim: { ttft_ms: TTFT[model], inter_token_ms: 2 },
  };
  if (!stream) return (await client.chat.completions.create(body)).id;
  const chunks = await client.chat.completions.create({ ...body, stream: true });
  let id = '';
  for await (const chunk of chunks) id = chunk.id;
  return id;
}

/** The last hour and the next: every request of the test. */
const range = () =>
  `from=${new Date(Date.now() - 3_600_000).toISOString()}&to=${new Date(Date.now() + 3_600_000).toISOString()}`;
/** Overhead p50 / p90: ms to the µs, whole ms from 100 ms (a cold first request on a loaded host). */
const OVERHEAD = String.raw`(\d+\.\d{3}|\d[\d,]*) ms`;
const OVERHEAD_CELL = new RegExp(`^${OVERHEAD} / ${OVERHEAD}$`);
const msOf = (cell: string) => Number(cell.split(' ms')[0]!.replace(/,/g, ''));

describe.skipIf(browserUnavailable)('latency in Chromium', () => {
  beforeAll(async () => {
    b = await startBrowserStack({ viewport: { width: 1280, height: 900 } });
    ({ stack, dash, page, ownerApi: api } = b);
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
    for (let i = 0; i < PER_MODEL; i++) {
      await complete(client, MODEL, i % 2 === 0);
      lastId = await complete(client, SLOW, i % 2 === 0);
    }
    await vi.waitFor(
      async () => {
        // Every request in the roll-ups with its overhead (what the overhead column is drawn from).
        const r = await api.call('GET', `/api/latency?${range()}&group_by=model`);
        expect(r.body.data.rows.map((x: Json) => [x.requests, x.overhead_requests])).toEqual([
          [PER_MODEL, PER_MODEL],
          [PER_MODEL, PER_MODEL],
        ]);
      },
      { timeout: 20_000, interval: 250 },
    );
  }, 180_000);

  afterAll(() => b?.close());

  it('shows time to first token, total and gateway overhead percentiles and tokens/s per model', async () => {
    await page.goto(`${dash.url}/#/usage`);
    const fast = page.getByTestId(`latency-${MODEL}`);
    const slow = page.getByTestId(`latency-${SLOW}`);
    await fast.waitFor();
    await slow.waitFor();
    const f = await fast.locator('td').allTextContents();
    const s = await slow.locator('td').allTextContents();
    // Model, requests, errors, first token, total, overhead, tokens/s.
    expect(f.slice(0, 3)).toEqual([MODEL, String(PER_MODEL), '0.0 % (0)']);
    expect(s.slice(0, 3)).toEqual([SLOW, String(PER_MODEL), '0.0 % (0)']);
    // The simulator's 600 ms before the first token show (histogram buckets: within ~25 %).
    expect(msOf(s[3]!)).toBeGreaterThan(400);
    expect(msOf(f[3]!)).toBeLessThan(msOf(s[3]!));
    expect(f[5], f.join(' | ')).toMatch(OVERHEAD_CELL);
    expect(s[5], s.join(' | ')).toMatch(OVERHEAD_CELL);
    expect(Number(f[6])).toBeGreaterThan(0);

    // The same figures from the API: every request carries its overhead, well under the provider's time.
    const r = await api.call('GET', `/api/latency?${range()}&group_by=model`);
    for (const row of r.body.data.rows as Json[]) {
      expect(row.overhead_requests, JSON.stringify(row)).toBe(PER_MODEL);
      expect(row.gateway_overhead_ms.avg).toBeGreaterThan(0);
      expect(row.gateway_overhead_ms.avg).toBeLessThan(row.total_ms.avg);
    }
    const byProvider = await api.call('GET', `/api/latency?${range()}&group_by=provider`);
    expect(byProvider.body.data.rows).toEqual([
      expect.objectContaining({ requests: 2 * PER_MODEL, overhead_requests: 2 * PER_MODEL }),
    ]);
    await page.goto('about:blank'); // a fresh load: the page reads group_by when it opens
    await page.goto(`${dash.url}/#/usage?group_by=provider`);
    const provider = page.getByTestId(`latency-${byProvider.body.data.rows[0].group}`);
    await provider.waitFor();
    expect((await provider.locator('td').allTextContents())[5]).toMatch(OVERHEAD_CELL);
  });

  it('shows the overhead and tokens per second of one generation', async () => {
    await page.goto(`${dash.url}/#/generations/${lastId}`);
    const detail = page.getByTestId('generation-detail');
    await expect.poll(() => detail.textContent(), { timeout: 10_000 }).toContain(lastId);
    const row = (name: string) =>
      detail.locator('div').filter({ has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) });
    expect(await row('gateway overhead').locator('dd').textContent()).toMatch(/^\d+\.\d{3} ms$/);
    expect(await row('tokens per second').locator('dd').textContent()).toMatch(/^\d+\.\d$/);
    const record = await stack.waitForGeneration(lastId);
    expect(record.body.data.gateway_overhead_ms).toBeGreaterThan(0);
  });

  it('photographs the section at 1280, 1920 and 390 px without overflow or serious axe violations', async () => {
    const violations: string[] = [];
    for (const width of [1280, 1920, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      await page.goto(`${dash.url}/#/usage`);
      await page.getByTestId(`latency-${SLOW}`).waitFor();
      await page.waitForLoadState('networkidle');
      await page
        .getByRole('region', { name: /Latency and errors/ })
        .screenshot({ path: resolve(SHOTS, `usage-latency-${width}.png`) });
      violations.push(...(await seriousAxeViolations(page)).map((v) => `usage@${width} ${v}`));
      const overflow = (await page.evaluate(
        'document.documentElement.scrollWidth - window.innerWidth',
      )) as number;
      expect(overflow, `usage overflows at ${width} px`).toBeLessThanOrEqual(1);
    }
    expect(violations).toEqual([]);
  });
});
