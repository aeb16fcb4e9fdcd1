import { keyLimitExceeded, type SpendReservation } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Json, readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import type { SpendGuard } from './guard';

/**
 * The proxy's side of a lapsed spend lease that no longer fits the limit (packages/spend README,
 * "renew"): the guard calls the reservation's onLost and the request stops — a stream with the §6
 * error chunk, a request still waiting for the provider with the HTTP error — and is still settled
 * and billed for what it consumed. The guard here is the seam's recording stand-in: it hands out a
 * reservation and lets the test fire onLost (the Redis side is tested in packages/spend).
 */
const reservations = new Map<string, SpendReservation>();
const settled = new Map<string, bigint>();
const guard: SpendGuard = {
  async admit({ key, requestId }) {
    const r: SpendReservation = {
      keyId: key.id,
      accountId: key.accountId,
      requestId,
      keyTracked: true,
      accountTracked: false,
    };
    reservations.set(requestId, r);
    return r;
  },
  async settle(reservation, costUnits) {
    if (reservation) settled.set(reservation.requestId, costUnits);
  },
};
const lose = (requestId: string) => reservations.get(requestId)!.onLost!(keyLimitExceeded('daily'));

let stack: ProxyStack;
beforeAll(async () => {
  stack = await startProxyStack({ deps: { guard } });
});
afterAll(async () => {
  await stack?.close();
});

describe('a lapsed lease over the limit stops the request', () => {
  it('ends a running stream with the error chunk and bills what was produced', async () => {
    const controller = new AbortController();
    // The lease is lost once the stream is running: its 200 and a few chunks reached the client (a
    // fixed wait raced a slow upstream on a loaded machine: stopped before the answer, that is a 403).
    let streaming: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      streaming = resolve;
    });
    const reading = readSse(
      `${stack.api}/chat/completions`,
      {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({
          model: 'openai/gpt-4o-mini',
          messages: [{ role: 'user', content: 'long stream' }],
          stream: true,
          sim: { completion_tokens: 400, inter_token_ms: 20 },
        }),
      },
      {
        controller,
        onData: (_payload, count) => {
          if (count >= 3) streaming();
        },
      },
    );
    const id = await vi.waitFor(() => {
      const ids = [...reservations.keys()];
      const last = ids[ids.length - 1];
      if (!last || !reservations.get(last)!.onLost) throw new Error('not admitted yet');
      return last;
    });
    await running;
    lose(id);
    const r = await reading;
    expect(r.status).toBe(200);
    const error = r.chunks.find((c: Json) => c.error);
    expect(error?.error?.code, r.raw.slice(-500)).toBe(403);
    expect(r.data[r.data.length - 1]).toBe('[DONE]');
    expect(r.chunks.filter((c: Json) => c.choices?.[0]?.delta?.content).length).toBeLessThan(400);
    const event = await vi.waitFor(() => {
      const e = stack.eventFor(id);
      if (!e) throw new Error('no event yet');
      return e;
    });
    await vi.waitFor(() => expect(settled.has(id)).toBe(true));
    expect(settled.get(id)).toBeGreaterThan(0n);
    expect(event.finish_reason).toBe('error');
  });

  it('answers a request still waiting for the provider with the HTTP error', async () => {
    const pending = fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'slow start' }],
        sim: { ttft_ms: 5_000 },
      }),
    });
    const before = new Set(reservations.keys());
    const id = await vi.waitFor(() => {
      const fresh = [...reservations.keys()].find((k) => !before.has(k) && reservations.get(k)!.onLost);
      if (!fresh) throw new Error('not admitted yet');
      return fresh;
    });
    lose(id);
    const res = await pending;
    const body = (await res.json()) as Json;
    expect(res.status, JSON.stringify(body)).toBe(403);
    expect(body.error.metadata.error_type).toBe('key_limit_exceeded');
    await vi.waitFor(() => expect(settled.has(id)).toBe(true));
  });
});
