import { createServer, OutgoingMessage, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { parseCatalog } from '@tollgate/catalog';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ProxyStack, startProxyStack } from '../../../test/stack';
import { dechunk, rawReads, relayWrites } from '../../../test/stream-writes';

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

/** The relay's writes to the proxy's client sockets (test/stream-writes.ts). */
const proxyWrites = () => relayWrites(Number(new URL(stack.proxy.url).port));

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
const rawChatReads = (model: string, extra: Record<string, unknown> = {}) =>
  rawReads(stack.proxy.url, streamedRequest(new URL(stack.proxy.url).host, model, extra));

describe('the head and the end of a streamed answer', () => {
  it('goes out in the same write as the first chunk when the provider sent them together', async () => {
    // The simulator writes its head with its first chunk. The proxy never sends its head on its own
    // (no flushHeaders: a separate write before the first chunk's).
    const flushes = proxyHeadFlushes();
    const reads = await rawChatReads('t/sim', { sim: { completion_tokens: 3 } });
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
    const writes = proxyWrites();
    const reads = await rawChatReads('t/sim', { sim: { completion_tokens: 3 } });
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
    const writes2 = proxyWrites();
    const pacedReads = await rawChatReads('t/sim', { sim: { completion_tokens: 6, inter_token_ms: 30 } });
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
    const reads = await rawChatReads('t/slow');
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
