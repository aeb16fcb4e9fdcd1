import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamAbort } from './upstream-abort';

describe('UpstreamAbort', () => {
  let server: Server;
  let pool: Pool;
  beforeAll(async () => {
    // Answers /fast at once; /hang only after 10 s (the tests abort it first).
    server = createServer((req, res) => {
      if (req.url === '/fast') res.end('ok');
      else setTimeout(() => res.end('late'), 10_000).unref();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  afterAll(async () => {
    await pool.close();
    server.closeAllConnections();
    server.close();
  });

  it('aborts an undici request waiting for its answer with an AbortError, and lets one finish untouched', async () => {
    const done = new UpstreamAbort();
    const fast = await pool.request({ method: 'GET', path: '/fast', signal: done.forRequest });
    expect(await fast.body.text()).toBe('ok');

    const a = new UpstreamAbort();
    const pending = pool.request({ method: 'GET', path: '/hang', signal: a.forRequest });
    setTimeout(() => a.abort(), 50);
    const err = await pending.then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as Error).name).toBe('AbortError');
    expect(a.aborted).toBe(true);
  });

  it('refuses a request started after the abort at once, as an aborted AbortSignal does', async () => {
    const a = new UpstreamAbort();
    a.abort();
    await expect(pool.request({ method: 'GET', path: '/hang', signal: a.forRequest })).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('its signal is made on first use, and is aborted with the same reason whichever came first', () => {
    const before = new UpstreamAbort();
    const signal = before.signal;
    expect(signal.aborted).toBe(false);
    before.abort();
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe('AbortError');

    const after = new UpstreamAbort();
    after.abort();
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(after.listenable.reason);
  });
});
