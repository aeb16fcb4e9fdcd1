import { connect, type Socket } from 'node:net';
import type { UsageEventV1 } from '@tollgate/events';
import type { TestKey } from '@tollgate/keys/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Json, readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';

/**
 * Issue 14 finding 3: deadlines and caps on the public edge. Clients that never read must not pin
 * provider connections; a key cannot hold more than its share of completions; a full provider pool
 * fails fast (503); a completion has a total duration cap; headers must arrive in time; the server
 * caps its connections.
 */
let stack: ProxyStack;
const model = 'openai/gpt-4o-mini';
const messages = [{ role: 'user', content: 'hello' }];
const WRITE_TIMEOUT_MS = 500;
const MAX_DURATION_MS = 6_000; // well past the stalled-client cut, even on a loaded host
const sockets: Socket[] = [];

beforeAll(async () => {
  stack = await startProxyStack({
    env: {
      STREAM_WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
      UPSTREAM_CONNECTIONS: '2',
      UPSTREAM_MAX_QUEUED: '1',
      MAX_CONCURRENT_COMPLETIONS_PER_KEY: '2',
      MAX_CONCURRENT_COMPLETIONS_PER_ACCOUNT: '3',
      COMPLETION_MAX_DURATION_MS: String(MAX_DURATION_MS),
      SERVER_HEADERS_TIMEOUT_MS: '1000',
      SERVER_MAX_CONNECTIONS: '40',
    },
  });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await stack?.close();
});

const newKey = (name: string): Promise<TestKey> => stack.keys.createKey(stack.account.id, { name });

function waitForEvent(id: string, timeout = 5_000): Promise<UsageEventV1> {
  return vi.waitFor(
    () => {
      const e = stack.eventFor(id);
      if (!e) throw new Error(`no usage event for ${id} yet`);
      return e;
    },
    { timeout, interval: 20 },
  );
}

async function post(key: TestKey, body: Record<string, unknown>) {
  const res = await fetch(`${stack.api}/chat/completions`, {
    method: 'POST',
    headers: bearer(key),
    body: JSON.stringify({ model, messages, ...body }),
  });
  return { status: res.status, id: res.headers.get('x-generation-id'), json: (await res.json()) as Json };
}

/** A raw TCP client; `onData` is never attached, so it never reads what the server sends. */
function rawSocket(): Promise<Socket> {
  const { port } = new URL(stack.proxy.url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => resolve(s));
    s.once('error', reject);
    sockets.push(s);
  });
}

/** Sends a streamed completion request of ~20 MB output over a socket that never reads. */
async function stalledStream(key: TestKey): Promise<Socket> {
  const s = await rawSocket();
  s.pause();
  const body = JSON.stringify({
    model,
    messages,
    stream: true,
    sim: { piece: 'word '.repeat(2_000), completion_tokens: 2_000 },
  });
  s.write(
    `POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return s;
}

const closedWithin = (s: Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (s.destroyed || s.readableEnded) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    s.once('close', done);
    s.once('end', done);
    s.resume(); // read (and discard) so a server-side close is seen
  });

describe('clients that never read', () => {
  it('are cut after STREAM_WRITE_TIMEOUT_MS, billed the provider usage as cancelled, and other clients are served', async () => {
    const stalledKey = await newKey('stalled');
    const otherKey = await newKey('other');
    const abortsBefore = stack.upstreamAborts;
    const eventsBefore = stack.events.length;
    // Two clients that never read take both provider connections (UPSTREAM_CONNECTIONS=2).
    await stalledStream(stalledKey);
    await stalledStream(stalledKey);
    await vi.waitFor(() => expect(stack.upstreamRequests).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    // Another client is still served: its request waits in the bounded queue until the stalled
    // streams are cut, then completes.
    const t0 = performance.now();
    const ok = await post(otherKey, {});
    expect(ok.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(WRITE_TIMEOUT_MS + 10_000); // generous: loaded CI host
    // Both stalled streams were cut and drained (issue 22): the provider's answer read to its end,
    // its usage billed, cancelled; the provider connections then serve others.
    const stalled = await vi.waitFor(
      () => {
        const evs = stack.events.slice(eventsBefore).filter((e) => e.key_id === stalledKey.id);
        if (evs.length < 2) throw new Error(`${evs.length} stalled events`);
        return evs;
      },
      { timeout: 15_000 },
    );
    for (const e of stalled) {
      expect(e).toMatchObject({ cancelled: true, streamed: true, usage_source: 'provider' });
      expect(e.tokens.completion).toBe(2_000);
      expect(Number(e.cost)).toBeGreaterThan(0);
    }
    expect(stack.upstreamAborts).toBe(abortsBefore);
  });
});

describe('per-key concurrency and provider capacity', () => {
  it('answers 429 in the error envelope when a key has too many completions in flight', async () => {
    const key = await newKey('busy');
    const slow = [post(key, { sim: { ttft_ms: 800 } }), post(key, { sim: { ttft_ms: 800 } })];
    await vi.waitFor(() => expect(stack.proxy.inFlight()).toBeGreaterThanOrEqual(2));
    const third = await post(key, {});
    expect(third.status).toBe(429);
    expect(third.json).toMatchObject({
      error: {
        code: 429,
        metadata: { error_type: 'rate_limited', limit: 2, reason: 'concurrency', scope: 'key' },
      },
    });
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    // Slots are released when a completion ends.
    expect((await post(key, {})).status).toBe(200);
  });

  it('counts a completion draining after its client went away against the key cap (no cancel-and-resend past it)', async () => {
    const key = await newKey('cancel-spam');
    const before = stack.upstreamRequests;
    const aborts = [new AbortController(), new AbortController()];
    const gone = aborts.map((a) =>
      fetch(`${stack.api}/chat/completions`, {
        method: 'POST',
        headers: bearer(key),
        body: JSON.stringify({ model, messages, sim: { ttft_ms: 1_500 } }),
        signal: a.signal,
      }).catch(() => null),
    );
    // Both reached the provider (a drain, not an abort, follows the client's going away).
    await vi.waitFor(() => expect(stack.upstreamRequests - before).toBeGreaterThanOrEqual(2));
    for (const a of aborts) a.abort();
    await Promise.all(gone);
    // The proxy has seen both clients go (their drains are under way; ttft is 1.5 s).
    await new Promise((r) => setTimeout(r, 300));
    const third = await post(key, {});
    expect(third.status).toBe(429);
    expect(third.json).toMatchObject({
      error: { metadata: { error_type: 'rate_limited', reason: 'concurrency', scope: 'key' } },
    });
    // The drains end with the provider's answer; their slots come back.
    await vi.waitFor(async () => expect((await post(key, {})).status).toBe(200), {
      timeout: 5_000,
      interval: 200,
    });
  });

  it('answers 429 when an account has too many completions in flight, whatever its number of keys', async () => {
    // Keys are free to mint: three keys of one account may not hold more than the account cap (3).
    const [x, y, z] = await Promise.all([newKey('acct-x'), newKey('acct-y'), newKey('acct-z')]);
    const slow = [
      post(x, { sim: { ttft_ms: 800 } }),
      post(x, { sim: { ttft_ms: 800 } }),
      post(y, { sim: { ttft_ms: 800 } }),
    ];
    await vi.waitFor(() => expect(stack.proxy.inFlight()).toBeGreaterThanOrEqual(3));
    const fourth = await post(z, {});
    expect(fourth.status).toBe(429);
    expect(fourth.json).toMatchObject({
      error: {
        code: 429,
        metadata: { error_type: 'rate_limited', limit: 3, reason: 'concurrency', scope: 'account' },
      },
    });
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await post(z, {})).status).toBe(200);
  });

  it('fails fast with 503 service_unavailable when the provider pool and its queue are full', async () => {
    // Two accounts, so that neither reaches the per-account cap (3) before the pool (2 + 1 queued).
    const other = await stack.keys.createAccount();
    const [a, b] = await Promise.all([newKey('cap-a'), stack.keys.createKey(other.id, { name: 'cap-b' })]);
    // 2 connections + 1 queued = the origin's capacity.
    const slow = [
      post(a, { sim: { ttft_ms: 800 } }),
      post(a, { sim: { ttft_ms: 800 } }),
      post(b, { sim: { ttft_ms: 800 } }),
    ];
    await vi.waitFor(() => expect(stack.proxy.inFlight()).toBeGreaterThanOrEqual(3));
    const t0 = performance.now();
    const refused = await post(b, {});
    expect(performance.now() - t0).toBeLessThan(1_500); // no waiting for a slot (loaded CI host: generous)
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({
      error: { code: 503, metadata: { error_type: 'service_unavailable', provider_name: 'sim' } },
    });
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200]);
  });
});

describe('total completion duration', () => {
  it('ends a stream that runs past COMPLETION_MAX_DURATION_MS with a 504 error chunk, billed', async () => {
    const key = await newKey('long');
    const t0 = performance.now();
    const r = await readSse(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(key),
      body: JSON.stringify({
        model,
        messages,
        stream: true,
        sim: { completion_tokens: 500, inter_token_ms: 20 },
      }),
    });
    const elapsed = performance.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(MAX_DURATION_MS - 50);
    expect(elapsed).toBeLessThan(MAX_DURATION_MS + 2_000);
    const error = r.chunks.find((c) => c.error);
    expect(error.error).toMatchObject({ code: 504, metadata: { error_type: 'timeout' } });
    expect(r.data.at(-1)).toBe('[DONE]');
    const event = await waitForEvent(r.headers.get('x-generation-id')!);
    expect(event).toMatchObject({ finish_reason: 'error', usage_source: 'estimated', error: { code: 504 } });
    expect(event.tokens.completion).toBeGreaterThan(10);
  });
});

describe('server deadlines and connection cap', () => {
  it('closes a connection whose headers do not arrive within SERVER_HEADERS_TIMEOUT_MS', async () => {
    const s = await rawSocket();
    s.write('POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n'); // never finished
    expect(await closedWithin(s, 3_000)).toBe(true);
  });

  it('keeps an idle keep-alive connection 65 s by default (above load balancers’ 60 s), whatever the headers timeout', async () => {
    // Behind an ALB (idle timeout 60 s) a server that closes idle connections first races the
    // balancer's next request on them: intermittent 502s. The old default was 5 s.
    const s = await rawSocket();
    let received = '';
    s.on('data', (d: Buffer) => {
      received += d.toString('latin1');
    });
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    s.write(request);
    await vi.waitFor(() => expect(received).toContain('{"status":"ok"}'), { timeout: 3_000 });
    expect(received).toMatch(/\r\nkeep-alive: timeout=65\r\n/i);
    // Idle past the old 5 s default and past SERVER_HEADERS_TIMEOUT_MS (1 s here): Node measures the
    // headers deadline from a request's first byte, not from the previous response.
    await new Promise((r) => setTimeout(r, 5_500));
    expect(s.destroyed || s.readableEnded).toBe(false);
    received = '';
    s.write(request);
    await vi.waitFor(() => expect(received).toContain('{"status":"ok"}'), { timeout: 3_000 });
    s.destroy();
  }, 15_000);

  it('refuses connections beyond SERVER_MAX_CONNECTIONS and keeps serving', async () => {
    const opened = await Promise.all(Array.from({ length: 45 }, () => rawSocket()));
    const closed = await Promise.all(opened.map((s) => closedWithin(s, 1_000)));
    expect(closed.filter(Boolean).length).toBeGreaterThanOrEqual(5);
    for (const s of opened) s.destroy();
    await vi.waitFor(async () => expect((await fetch(`${stack.proxy.url}/healthz`)).status).toBe(200));
  });
});
