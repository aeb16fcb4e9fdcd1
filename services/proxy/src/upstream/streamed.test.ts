import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamAbort } from '../pipeline/upstream-abort';
import { StreamedBody } from './streamed';
import { isAbortError, readSome } from './upstream';

/**
 * Sends the next piece of a `/stepped…` answer: the test calls it once its sink has received the
 * previous one, so no two pieces can reach the client in one read (timers 30 ms apart did, on a loaded
 * host, where both fire in the same turn of the server's event loop).
 */
let step: () => void = () => {};

/** An answer of `pieces`, each sent after the sink took the one before; `end` alone after the last. */
function stepped(res: ServerResponse, pieces: string[], endAlone: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let next = 0;
  step = () => {
    if (res.writableEnded) return;
    const piece = pieces[next++];
    if (piece === undefined) res.end();
    else if (next === pieces.length && !endAlone) res.end(piece);
    else res.write(piece);
  };
  step();
}

/** Routes of a real HTTP server, each answering the way a provider can. */
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  // Three reads, the last one carrying the end of the body.
  '/stepped': (_req, res) => stepped(res, ['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n'], false),
  // The end arrives alone, after the last data.
  '/stepped-late-end': (_req, res) => stepped(res, ['data: 1\n\n'], true),
  // Three pieces on timers (read whole by text(), or not at all).
  '/paced': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    setTimeout(() => res.write('data: 2\n\n'), 30);
    setTimeout(() => res.end('data: 3\n\n'), 60);
  },
  // 4 MiB as fast as the socket takes them.
  '/big': (_req, res) => {
    res.writeHead(200);
    const piece = Buffer.alloc(64 * 1024, 97);
    let left = 64;
    const more = () => {
      while (left > 0) {
        left--;
        if (!res.write(piece)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  },
  // Never ends.
  '/endless': (_req, res) => {
    res.writeHead(200);
    const t = setInterval(() => res.write('data: x\n\n'), 10);
    res.on('close', () => clearInterval(t));
  },
  '/refused': (_req, res) => {
    res.writeHead(429, { 'retry-after': '3' });
    res.end('{"error":{"message":"slow down"}}');
  },
};

let server: Server;
let pool: Pool;
beforeAll(async () => {
  server = createServer((req, res) => (routes[req.url ?? ''] ?? routes['/refused'])?.(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 4 });
});
afterAll(async () => {
  await pool.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const get = (path: string, signal?: AbortSignal) =>
  StreamedBody.request(pool, { method: 'GET', path }, signal);

describe('StreamedBody (the relay on undici dispatch callbacks)', () => {
  it('hands every read over in order, the read that ended the body marked last', async () => {
    const up = await get('/stepped');
    expect(up.statusCode).toBe(200);
    expect(up.headers['content-type']).toBe('text/event-stream');
    const reads: Array<[string, boolean]> = [];
    await (up.body as StreamedBody).relay((bytes, last) => {
      reads.push([bytes.toString(), last]);
      step();
      return undefined;
    });
    expect(reads).toEqual([
      ['data: 1\n\n', false],
      ['data: 2\n\n', false],
      ['data: 3\n\n', true],
    ]);
  });

  it('settles when the end comes alone after the last read (that read not marked last)', async () => {
    const up = await get('/stepped-late-end');
    const reads: Array<[string, boolean]> = [];
    await (up.body as StreamedBody).relay((bytes, last) => {
      reads.push([bytes.toString(), last]);
      step();
      return undefined;
    });
    expect(reads).toEqual([['data: 1\n\n', false]]);
  });

  it('pauses the provider while the sink waits, and delivers every byte once it resumes', async () => {
    const up = await get('/big');
    let total = 0;
    let waits = 0;
    let inWait = false;
    await (up.body as StreamedBody).relay((bytes) => {
      expect(inWait).toBe(false); // nothing is handed over while the sink waits
      total += bytes.length;
      if (total > 512 * 1024 && waits < 3) {
        waits++;
        inWait = true;
        return new Promise<void>((r) =>
          setTimeout(() => {
            inWait = false;
            r();
          }, 50),
        );
      }
      return undefined;
    });
    expect(waits).toBe(3);
    expect(total).toBe(64 * 64 * 1024);
  });

  it('an abort of the signal mid-stream rejects the relay with an abort error', async () => {
    const ac = new AbortController();
    const up = await get('/endless', ac.signal);
    let reads = 0;
    const relayed = (up.body as StreamedBody).relay(() => {
      if (++reads === 3) ac.abort();
      return undefined;
    });
    const err = await relayed.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isAbortError(err)).toBe(true);
  });

  it('a signal aborted before the request rejects the request', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await get('/paced', ac.signal).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isAbortError(err)).toBe(true);
  });

  it('destroy from inside the sink stops the reads and rejects the relay with its error', async () => {
    const up = await get('/endless');
    const stop = new Error('stop');
    let after = 0;
    let destroyed = false;
    const err = await (up.body as StreamedBody)
      .relay(() => {
        if (destroyed) after++;
        destroyed = true;
        (up.body as StreamedBody).destroy(stop);
        return undefined;
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBe(stop);
    await new Promise((r) => setTimeout(r, 50));
    expect(after).toBe(0);
  });

  it("a sink's rejected wait aborts the request and rejects the relay with it", async () => {
    const up = await get('/endless');
    const gone = new Error('client gone');
    const err = await (up.body as StreamedBody)
      .relay(() => Promise.reject(gone))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBe(gone);
  });

  it('an error answer is read by iteration (readSome) and by text()', async () => {
    const a = await get('/refused');
    expect(a.statusCode).toBe(429);
    expect(a.headers['retry-after']).toBe('3');
    expect(await readSome(a.body)).toBe('{"error":{"message":"slow down"}}');
    const b = await get('/refused');
    expect(await b.body.text()).toBe('{"error":{"message":"slow down"}}');
  });

  it('text() of a body that filled the queue before anyone read it: the paused provider resumes, every byte arrives', async () => {
    const up = await get('/big');
    // Nobody reads for a while: the queue passes its high-water mark and the provider is paused.
    await new Promise((r) => setTimeout(r, 100));
    const text = await up.body.text();
    expect(text.length).toBe(64 * 64 * 1024);
    expect(text.startsWith('aaaa')).toBe(true);
  });

  it("a JSON request's UpstreamAbort (its listenable, no AbortSignal): aborts a waiting answer, and leaves one finished untouched", async () => {
    const done = new UpstreamAbort();
    const fast = await get('/paced', done.forRequest);
    expect(await fast.body.text()).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    done.abort(); // after the end: nothing to abort, no error
    const a = new UpstreamAbort();
    const up = await get('/endless', a.forRequest);
    const reading = up.body.text();
    setTimeout(() => a.abort(), 30);
    const err = await reading.then(
      () => null,
      (e: unknown) => e,
    );
    expect(isAbortError(err)).toBe(true);
    // Aborted before the request: refused at once.
    await expect(get('/paced', a.forRequest)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('leaving an iteration early aborts the rest of the answer', async () => {
    const up = await get('/endless');
    let n = 0;
    for await (const _ of up.body) if (++n === 2) break;
    // The pool's connection was aborted: another request still gets a connection and an answer.
    const next = await get('/paced');
    expect(await next.body.text()).toContain('data: 3');
  });

  it('a refused connection rejects the request', async () => {
    const closed = new Pool('http://127.0.0.1:1', { connections: 1 });
    const err = await StreamedBody.request(closed, { method: 'GET', path: '/' }).then(
      () => null,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).toBe('ECONNREFUSED');
    await closed.close();
  });
});
