import { createServer, OutgoingMessage, type Server, ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { parseCatalog } from '@tollgate/catalog';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ProxyStack, startProxyStack } from '../../../test/stack';

// When the 200 and the SSE headers of a streamed answer reach the client (issue 11: one write and one
// client wake-up fewer per stream). The head goes out with the first chunk when the provider's first
// chunk came with its headers, and on its own, at once, when the provider's first token is slow.

const SLOW_MS = 400;
let stack: ProxyStack;
let sim: ProviderSim;
let slow: Server;

/** A provider that commits its 200 at once and sends its first chunk SLOW_MS later. */
function slowFirstToken(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  setTimeout(() => {
    res.end(
      `${chunk({ role: 'assistant', content: 'late' }, null)}${chunk({}, 'stop')}data: ${JSON.stringify({
        id: 'up-1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [],
        usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
      })}\n\ndata: [DONE]\n\n`,
    );
  }, SLOW_MS);
}

beforeAll(async () => {
  sim = await startProviderSim();
  slow = createServer((req, res) => {
    req.resume();
    req.on('end', () => slowFirstToken(res));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
  const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`;
  stack = await startProxyStack({
    deps: {
      catalog: parseCatalog(
        `
providers:
  - { name: sim, base_url: "${sim.baseUrl}", simulator: true }
  - { name: slow, base_url: "${slowUrl}" }
models:
  - { id: t/sim, name: sim, context_length: 8000, max_output_tokens: 100, created: 1, providers: [{ provider: sim, model: gpt-4o-mini }], pricing: { prompt: "0.000001", completion: "0.000002" } }
  - { id: t/slow, name: slow, context_length: 8000, max_output_tokens: 100, created: 1, providers: [{ provider: slow, model: m }], pricing: { prompt: "0.000001", completion: "0.000002" } }
`,
        { env: {} },
      ),
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await sim?.close();
  await new Promise<void>((r) => slow?.close(() => r()));
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** flushHeaders calls on the proxy's own responses (not the fake provider's, in this process too). */
function proxyHeadFlushes(): () => number {
  const original = OutgoingMessage.prototype.flushHeaders;
  const port = Number(new URL(stack.proxy.url).port);
  let count = 0;
  vi.spyOn(OutgoingMessage.prototype, 'flushHeaders').mockImplementation(function (this: OutgoingMessage) {
    if (this.socket?.localPort === port) count++;
    original.call(this);
  });
  return () => count;
}

/**
 * The relay's writes to the proxy's client sockets: `res` through `res.write`, `direct` to the socket
 * itself (http/http-chunk.ts), `inEnd`: socket writes of any bytes made inside `res.end`; `last`: the
 * last direct write's bytes.
 */
function relayWrites(): () => { res: number; direct: number; inEnd: number; last: string } {
  const port = Number(new URL(stack.proxy.url).port);
  const counts = { res: 0, direct: 0, inEnd: 0, last: '' };
  let inEnd = 0;
  let inside = 0;
  for (const method of ['write', 'end'] as const) {
    const original = ServerResponse.prototype[method] as (...a: unknown[]) => unknown;
    vi.spyOn(ServerResponse.prototype, method).mockImplementation(function (
      this: ServerResponse,
      ...args: unknown[]
    ) {
      if (method === 'write' && this.socket?.localPort === port) counts.res++;
      inside++;
      if (method === 'end') inEnd++;
      try {
        return original.apply(this, args);
      } finally {
        inside--;
        if (method === 'end') inEnd--;
      }
    } as never);
  }
  const socketWrite = net.Socket.prototype.write as (...a: unknown[]) => boolean;
  vi.spyOn(net.Socket.prototype, 'write').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    if (this.localPort === port) {
      const data = args[0] as string | Buffer;
      if (inside === 0) {
        counts.direct++;
        counts.last = Buffer.from(data).toString('latin1');
      } else if (inEnd > 0 && data.length > 0) counts.inEnd++;
    }
    return socketWrite.apply(this, args);
  } as never);
  return () => ({ ...counts });
}

/**
 * The body of a raw HTTP/1.1 answer with `transfer-encoding: chunked`, decoded strictly (every chunk's
 * size line, its exact bytes and CRLF, the terminating `0` chunk); throws on any framing error.
 */
function dechunk(raw: Buffer): string {
  const headEnd = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, headEnd).toString('latin1');
  if (!/\r\ntransfer-encoding: chunked/i.test(head)) throw new Error(`not chunked: ${head}`);
  const parts: Buffer[] = [];
  let at = headEnd + 4;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol === -1) throw new Error('no chunk size line');
    const size = Number.parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isInteger(size)) throw new Error(`bad chunk size at ${at}`);
    const start = eol + 2;
    if (raw.subarray(start + size, start + size + 2).toString('latin1') !== '\r\n') {
      throw new Error(`chunk of ${size} bytes at ${start} not followed by CRLF`);
    }
    if (size === 0) {
      if (start + 2 !== raw.length) throw new Error('bytes after the last chunk');
      return Buffer.concat(parts).toString('utf8');
    }
    parts.push(raw.subarray(start, start + size));
    at = start + size + 2;
  }
}

/** A streamed chat request on a raw HTTP/1.1 connection. */
function streamedRequest(host: string, model: string, extra: Record<string, unknown>, close = true): string {
  const body = JSON.stringify({
    model,
    stream: true,
    messages: [{ role: 'user', content: 'When does the head arrive?' }],
    ...extra,
  });
  return (
    `POST /api/v1/chat/completions HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${stack.inference.key}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${close ? 'connection: close\r\n' : ''}\r\n${body}`
  );
}

/** The raw reads of one streamed request on its own connection, with their arrival times. */
async function rawReads(model: string, extra: Record<string, unknown> = {}) {
  const url = new URL(stack.proxy.url);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.setNoDelay(true);
  const reads: Array<{ at: number; text: string; bytes: Buffer }> = [];
  const started = performance.now();
  socket.write(streamedRequest(url.host, model, extra));
  socket.on('data', (b: Buffer) =>
    reads.push({ at: performance.now() - started, text: b.toString('utf8'), bytes: b }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('end', () => resolve());
    socket.once('error', reject);
  });
  return reads;
}

describe('the head and the end of a streamed answer', () => {
  it('goes out in the same write as the first chunk when the provider sent them together', async () => {
    // The simulator writes its head with its first chunk. The proxy never sends its head on its own
    // (no flushHeaders: a separate write before the first chunk's).
    const flushes = proxyHeadFlushes();
    const reads = await rawReads('t/sim', { sim: { completion_tokens: 3 } });
    expect(flushes()).toBe(0);
    const first = reads[0]?.text ?? '';
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expect(first, first).toContain('content-type: text/event-stream');
    expect(first, first).toContain('data: {');
    const all = reads.map((r) => r.text).join('');
    expect(all).toContain('data: [DONE]');
  });

  it('leaves with the whole answer in one write when the provider sent it whole', async () => {
    // The simulator sends a short unpaced stream in one write: its end arrives with its first chunk,
    // so the relay holds the content and writes it with the head, the usage chunk, [DONE] and the
    // body's terminator: one socket write (http/http-chunk.ts endChunked), none by res.write or res.end.
    const writes = relayWrites();
    const reads = await rawReads('t/sim', { sim: { completion_tokens: 3 } });
    expect(writes()).toMatchObject({ res: 0, direct: 1, inEnd: 0 });
    expect(writes().last).toMatch(/^HTTP\/1\.1 200 [\s\S]*data: \[DONE\]\n\n\r\n0\r\n\r\n$/);
    const all = reads.map((r) => r.text).join('');
    const data = all
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks.at(-1).usage).toMatchObject({ completion_tokens: 3 });
    expect(chunks.filter((c) => c.choices?.[0]?.delta?.content).length).toBe(3);
    // The simulator's content chunks carry `"usage":null` (include_usage): stripped, id and model rewritten.
    for (const chunk of chunks.slice(0, -1)) {
      expect('usage' in chunk, JSON.stringify(chunk)).toBe(false);
      expect(chunk.id).toBe(chunks.at(-1).id);
      expect(chunk.model).toBe('t/sim');
    }
    // Paced, the chunks still leave one by one as they arrive, framed by the relay and written to the
    // socket directly (http/http-chunk.ts): the first with the head (unless the head was flushed
    // alone before it), the last with the body's terminator, res.end writing nothing more.
    vi.restoreAllMocks();
    const writes2 = relayWrites();
    const pacedReads = await rawReads('t/sim', { sim: { completion_tokens: 6, inter_token_ms: 30 } });
    expect(writes2().res).toBe(0);
    expect(writes2().direct).toBeGreaterThanOrEqual(2);
    expect(writes2().inEnd).toBe(0);
    expect(writes2().last).toMatch(/data: \[DONE\]\n\n\r\n0\r\n\r\n$/);
    // How many reads the chunks take depends on the machine's load (a busy proxy or client reads
    // several at once): the bytes do not.
    // The relay's own chunk framing makes one valid chunked body.
    const body = dechunk(Buffer.concat(pacedReads.map((r) => r.bytes)));
    const pacedData = body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    expect(pacedData.at(-1)).toBe('[DONE]');
    const pacedChunks = pacedData.slice(0, -1).map((d) => JSON.parse(d));
    expect(pacedChunks.filter((c) => c.choices?.[0]?.delta?.content).length).toBe(6);
    expect(pacedChunks.at(-1).usage).toMatchObject({ completion_tokens: 6 });
  });

  it('ends each streamed answer on a keep-alive connection so the next request on it is answered', async () => {
    // The relay writes the body's terminator itself (http/http-chunk.ts endChunked): node:http must
    // still see the response end and read the next request of the connection.
    const url = new URL(stack.proxy.url);
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (b: Buffer) => chunks.push(b));
    const answers: string[] = [];
    for (const sim of [
      { completion_tokens: 3 },
      { completion_tokens: 4, inter_token_ms: 20 },
      { completion_tokens: 2 },
    ]) {
      chunks.length = 0;
      socket.write(streamedRequest(url.host, 't/sim', { sim }, false));
      // One answer: its head, its chunks, the zero-size chunk.
      await vi.waitFor(() => expect(Buffer.concat(chunks).toString('latin1')).toMatch(/\r\n0\r\n\r\n$/), {
        timeout: 30_000,
        interval: 20,
      });
      const raw = Buffer.concat(chunks);
      expect(raw.toString('latin1')).not.toMatch(/connection: close/i);
      answers.push(dechunk(raw));
    }
    socket.destroy();
    expect(answers).toHaveLength(3);
    for (const [i, body] of answers.entries()) {
      const data = body
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6));
      expect(data.at(-1)).toBe('[DONE]');
      const usage = JSON.parse(data.at(-2) as string).usage;
      expect(usage.completion_tokens).toBe([3, 4, 2][i]);
    }
  });

  it('goes out on its own, at once, when the first token is slow', async () => {
    const flushes = proxyHeadFlushes();
    const reads = await rawReads('t/slow');
    expect(flushes()).toBe(1);
    const head = reads[0];
    expect(head?.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(head?.text).not.toContain('data:');
    const firstData = reads.find((r) => r.text.includes('data:'));
    expect(firstData, JSON.stringify(reads)).toBeDefined();
    // The head was not held back until the first chunk.
    expect((firstData?.at ?? 0) - (head?.at ?? 0)).toBeGreaterThan(SLOW_MS / 2);
    const all = reads.map((r) => r.text).join('');
    expect(all).toContain('"content":"late"');
    expect(all).toContain('data: [DONE]');
  });
});
