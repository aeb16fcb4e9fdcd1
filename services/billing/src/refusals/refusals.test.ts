import { randomUUID } from 'node:crypto';
import { inspectDeadLetters, type RefusalEventV1 } from '@tollgate/events';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  registerTestKey,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  testRequestId,
  usageEvent,
} from '../../test/testing';
import { REFUSALS_PER_KEY } from './refusals.repository';

/**
 * Issue 28, errors and refusals as data: billing verifies the proxy's refusal events like any usage
 * event (signature, key, time; no cost to check), counts them in the hourly and daily roll-ups by
 * key, error type and status class, keeps the last ones per key (bounded) and finds one by its id.
 */
let s: TestBillingStack;
const account = randomUUID();
const key = randomUUID();
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies checked by the assertions
type Json = any;

function refusal(overrides: Partial<RefusalEventV1> = {}): RefusalEventV1 {
  const at = overrides.finished_at ?? new Date().toISOString();
  return {
    type: 'refusal',
    version: 1,
    id: testRequestId(new Date(at)),
    account_id: account,
    key_id: key,
    api_type: 'chat',
    model: 'nobody/not-in-the-catalog',
    app: 'Café bot ✓',
    status: 403,
    error_type: 'limit',
    code: 'key_limit_exceeded',
    message: 'Key limit exceeded',
    finished_at: at,
    ...overrides,
  };
}

beforeAll(async () => {
  s = await startTestBilling({ USAGE_CHECKS: 'signature,cost,key,time' });
  registerTestKey({ keyId: key, accountId: account });
});
afterAll(async () => {
  await s.cleanup();
});

async function get(path: string) {
  const res = await fetch(`${s.billing.url}/internal/accounts/${account}${path}`, {
    headers: await serviceHeaders('dashboard'),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Json, text };
}

const stored = async (id: string) => (await get(`/refusals/${id}`)).status === 200;

describe('refusal events in billing', () => {
  it('records a signed refusal (no cost, a model billing does not price) and finds it by its id', async () => {
    const e = refusal();
    await s.publish(e);
    await vi.waitFor(async () => expect(await stored(e.id)).toBe(true), { timeout: 10_000 });
    const r = await get(`/refusals/${e.id}`);
    expect(r.body.data).toMatchObject({
      id: e.id,
      key_id: key,
      status: 403,
      error_type: 'limit',
      code: 'key_limit_exceeded',
      model: 'nobody/not-in-the-catalog',
      app: 'Café bot ✓',
    });
    expect((await get('/refusals/gen-1-nope')).status).toBe(400);
    expect((await get(`/refusals/${testRequestId()}`)).status).toBe(404);
  });

  it('refuses an unsigned refusal and one of a key that is not the account’s (dead-lettered)', async () => {
    const unsigned = refusal();
    const conn = await amqp.connect(s.config.AMQP_URL);
    const ch = await conn.createConfirmChannel();
    ch.publish(
      s.topology.exchange,
      s.routingKeyOf(unsigned.account_id),
      Buffer.from(JSON.stringify(unsigned)),
      {
        persistent: true,
      },
    );
    await ch.waitForConfirms();
    await conn.close();
    const foreign = refusal({ key_id: randomUUID() });
    await s.publish(foreign);
    await vi.waitFor(
      async () => {
        const report = await inspectDeadLetters(s.config.AMQP_URL, s.topology, 100);
        const reasons = new Map(report.messages.map((m) => [m.id, m.reason]));
        expect(reasons.get(unsigned.id)).toBe('signature: the message is not signed');
        expect(reasons.get(foreign.id)).toMatch(/unknown to the keys service/);
      },
      { timeout: 10_000 },
    );
    expect(await stored(unsigned.id)).toBe(false);
    expect(await stored(foreign.id)).toBe(false);
  });

  it('counts every refusal by type and status class beside the answered requests; keeps the last 50 per key', async () => {
    const day = '2026-11-20';
    const at = (i: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, i)).toISOString();
    // Recorded directly (the worker's time check would refuse events from days ago).
    await s.billing.recorder.record([
      usageEvent({ account_id: account, key_id: key, finished_at: at(0) }),
      usageEvent({ account_id: account, key_id: key, finished_at: at(1) }),
      usageEvent({
        account_id: account,
        key_id: key,
        finished_at: at(2),
        error: { code: 502, message: 'x' },
      }),
    ]);
    const { recordRefusals } = await import('./refusals.repository');
    const limits = Array.from({ length: REFUSALS_PER_KEY + 5 }, (_, i) =>
      refusal({ finished_at: at(10 + i) }),
    );
    const rateLimited = refusal({
      status: 429,
      error_type: 'rate_limit',
      code: 'rate_limited',
      finished_at: at(5),
    });
    const provider = refusal({
      status: 502,
      error_type: 'provider',
      code: 'provider_error',
      finished_at: at(6),
    });
    expect(await recordRefusals(s.billing.db, [...limits.slice(0, 30), rateLimited, provider])).toBe(32);
    expect(await recordRefusals(s.billing.db, [...limits.slice(25)])).toBe(limits.length - 30); // redelivery: once

    const daily = await get(`/errors?from=${day}T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=day`);
    expect(daily.status, daily.text).toBe(200);
    const expected = {
      bucket: `${day}T00:00:00.000Z`,
      group: null,
      requests: 3,
      errors: 1,
      refused: { limit: 55, rate_limit: 1, auth: 0, bad_request: 0, provider: 1, other: 0 },
      status: { '2xx': 2, '4xx': 56, '5xx': 2 },
    };
    expect(daily.body.data.rows).toEqual([expect.objectContaining(expected)]);
    expect(daily.body.data.rows[0].error_rate).toBeCloseTo(58 / 60, 6);
    const hourly = await get(
      `/errors?from=${day}T10:00:00Z&to=${day}T11:00:00Z&granularity=hour&group_by=key`,
    );
    expect(hourly.body.data.rows).toEqual([
      expect.objectContaining({ ...expected, bucket: `${day}T10:00:00.000Z`, group: key }),
    ]);

    const recent = await get(`/refusals?key_id=${key}&limit=50`);
    expect(recent.body.data).toHaveLength(REFUSALS_PER_KEY);
    expect(recent.body.data.map((r: Json) => r.id)).toContain(limits.at(-1)?.id);
    expect(await stored(rateLimited.id)).toBe(false); // trimmed: older than the key's last 50
    expect((await get(`/errors?from=${day}T00:00:00Z&to=2026-11-21T00:00:00Z&granularity=week`)).status).toBe(
      400,
    );
  });
});
