import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import type { TestKey } from '@tollgate/keys/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { capConnections, connectionBudget, openFilesLimit } from './connection-cap';

describe('the connection budget', () => {
  it('reads the soft open-files limit of /proc/self/limits', () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units',
      'Max processes             95000                95000                processes',
      'Max open files            20000                524288               files',
    ].join('\n');
    expect(openFilesLimit(() => limits)).toBe(20_000);
    expect(
      openFilesLimit(() => 'Max open files            unlimited            unlimited            files'),
    ).toBeNull();
    expect(
      openFilesLimit(() => {
        throw new Error('no /proc');
      }),
    ).toBeNull();
    const here = openFilesLimit();
    if (process.platform === 'linux') expect(here).toBeGreaterThan(0);
  });

  it('serves what the descriptors allow after the reserve and the provider connections', () => {
    // 20,000 files: reserve 1,000, 3 origins × 256 provider connections.
    expect(connectionBudget(16_000, 20_000, 768)).toEqual({ serve: 16_000, headroom: 500 });
    expect(connectionBudget(0, 20_000, 768)).toEqual({ serve: 18_232, headroom: 500 });
    // 1,024 files (a common default): the configured 10,000 is not reachable.
    expect(connectionBudget(10_000, 1_024, 256)).toEqual({ serve: 512, headroom: 128 });
    expect(connectionBudget(40, null)).toEqual({ serve: 40, headroom: 256 });
    expect(connectionBudget(0, null)).toEqual({ serve: 0, headroom: 0 });
    // A provider pool as large as the limit (bench/compare: UPSTREAM_CONNECTIONS=20000): two per stream.
    expect(connectionBudget(0, 20_000, 20_000)).toEqual({ serve: 9_500, headroom: 500 });
    expect(connectionBudget(10_000, 20_000, 40_000)).toEqual({ serve: 9_500, headroom: 500 });
  });
});

/** A client connection that keeps its side open when the server closes its own (allowHalfOpen). */
function client(port: number): Promise<{ s: Socket; text: () => string; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    const ended = new Promise<void>((r) => s.once('end', () => r()));
    s.once('error', reject);
    s.once('connect', () => resolve({ s, text: () => text, ended }));
  });
}

describe('capConnections', () => {
  it('serves up to `serve` connections and answers the others a whole 503 at once, holding at most `headroom`', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    const cap = capConnections(server, { serve: 2, headroom: 3 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const get = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    try {
      const served = [await client(port), await client(port)];
      for (const c of served) {
        c.s.write(get);
        await vi.waitFor(() => expect(c.text()).toMatch(/^HTTP\/1\.1 200[\s\S]*ok$/));
      }
      // Five more whose clients never close: each gets the 503 and the server's FIN, request or not.
      const refused = [];
      for (let i = 0; i < 5; i++) {
        const c = await client(port);
        if (i % 2 === 0) c.s.write(get);
        await c.ended;
        refused.push(c);
        const [fields, body] = c.text().split('\r\n\r\n');
        const head = `${fields}\r\n`;
        expect(head).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
        expect(head).toContain('\r\nretry-after: 1\r\n');
        expect(head).toContain('\r\nconnection: close\r\n');
        expect(head).toContain(`\r\ncontent-length: ${Buffer.byteLength(body ?? '')}\r\n`);
        expect(JSON.parse(body ?? '')).toMatchObject({
          error: { code: 503, metadata: { error_type: 'service_unavailable' } },
        });
      }
      // The two oldest were let go to keep the descriptors held by refusals at `headroom`.
      expect(cap.refusing()).toBe(3);
      expect(cap.open()).toBe(2);
      // Clients that close are let go at once; a connection freed is served again.
      for (const c of refused) c.s.end();
      await vi.waitFor(() => expect(cap.refusing()).toBe(0));
      served[0]?.s.destroy();
      await vi.waitFor(() => expect(cap.open()).toBe(1));
      const again = await client(port);
      again.s.write(get);
      await vi.waitFor(() => expect(again.text()).toMatch(/^HTTP\/1\.1 200[\s\S]*ok$/));
      expect(server.maxConnections).toBeUndefined(); // Node's cap closes at accept: a reset
      again.s.destroy();
      served[1]?.s.destroy();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

/** A process at its connection cap answers the excess 503 in the standard envelope, never a reset. */
describe('past the connection cap', () => {
  let stack: ProxyStack;
  let key: TestKey;
  const CAP = 4;
  const BACKLOG = 1500;
  beforeAll(async () => {
    stack = await startProxyStack({
      env: { SERVER_MAX_CONNECTIONS: String(CAP), SERVER_LISTEN_BACKLOG: String(BACKLOG) },
    });
    key = await stack.keys.createKey(stack.account.id, { name: 'cap' });
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** One request on its own connection (raw HTTP/1.1), its whole answer and how the socket ended. */
  function rawRequest(body: object): Promise<{ head: string; body: string; error?: string }> {
    const { port } = new URL(stack.proxy.url);
    const payload = JSON.stringify(body);
    return new Promise((resolve) => {
      const s: Socket = connect(Number(port), '127.0.0.1');
      let received = '';
      let error: string | undefined;
      s.on('data', (d) => {
        received += d.toString();
      });
      s.on('error', (e: NodeJS.ErrnoException) => {
        error = e.code ?? e.message;
      });
      s.on('close', () => {
        const at = received.indexOf('\r\n\r\n');
        resolve({ head: received.slice(0, at), body: received.slice(at + 4), ...(error ? { error } : {}) });
      });
      s.write(
        `POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n${Object.entries(bearer(key))
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` +
          `Connection: close\r\n\r\n${payload}`,
      );
    });
  }

  /** iproute2's `ss` (Linux): the only place a listening socket's backlog is shown. */
  const ss = (() => {
    try {
      execFileSync('ss', ['-V'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!ss)(
    'listens with SERVER_LISTEN_BACKLOG (a burst queues in the kernel instead of being dropped)',
    () => {
      const { port } = new URL(stack.proxy.url);
      // For a listening socket `ss` shows the backlog as Send-Q; the kernel caps it at somaxconn.
      const [state, , sendQ] = execFileSync('ss', ['-ltnH', `sport = :${port}`])
        .toString()
        .trim()
        .split(/\s+/);
      const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
      expect(state).toBe('LISTEN');
      expect(Number(sendQ)).toBe(Math.min(BACKLOG, somaxconn));
      expect(Number(sendQ)).not.toBe(511); // Node's default
    },
  );

  it('answers 503 with retry-after to connections past the cap while it serves the others to the end', async () => {
    const held = Array.from({ length: CAP }, (_, i) =>
      rawRequest({
        model: 'openai/gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: `held ${i}` }],
        sim: { completion_tokens: 40, inter_token_ms: 40 },
      }),
    );
    await new Promise((r) => setTimeout(r, 400)); // the held streams are open
    const excess = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        rawRequest({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `excess ${i}` }] }),
      ),
    );
    for (const r of excess) {
      expect(r.error).toBeUndefined(); // no ECONNRESET, no EPIPE
      expect(r.head).toMatch(/^HTTP\/1\.1 503/);
      expect(r.head.toLowerCase()).toContain('retry-after: 1');
      const envelope = JSON.parse(r.body) as {
        error: { code: number; message: string; metadata: { error_type: string } };
      };
      expect(envelope.error.code).toBe(503);
      expect(envelope.error.metadata.error_type).toBe('service_unavailable');
      expect(envelope.error.message).toMatch(/connection limit/);
    }
    for (const r of await Promise.all(held)) {
      expect(r.error).toBeUndefined();
      expect(r.head).toMatch(/^HTTP\/1\.1 200/);
      expect(r.body).toContain('[DONE]');
    }
    // Below the cap again: served.
    const after = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'after' }] }),
    });
    expect(after.status).toBe(200);
  }, 30_000);
});
