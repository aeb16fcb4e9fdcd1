import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseCatalog } from '@tollgate/catalog';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ProxyStack, startProxyStack } from '../../test/stack';
import { dechunk, type RelayWrites, rawReads, relayWrites } from '../../test/stream-writes';

// The writes of a streamed Messages or Responses answer, translated and native (issue 30), as the chat
// relay makes them (doors/chat/stream-head.e2e.test.ts): the head leaves with the first events in one
// socket write, every chunk is one socket write of its own framing (http/http-chunk.ts
// `chunkSocket`, doors/chunk-write.ts), and the last chunk leaves with the body's terminator
// (`endChunked`); `res.write` is never called and `res.end` writes nothing.

const PACE_MS = 30;
const SLOW_MS = 400;
let stack: ProxyStack;
let sim: ProviderSim;
/** Relays the simulator's answer event by event, PACE_MS apart (its Responses stream comes whole). */
let pacer: Server;
/** A chat-completions provider whose first token comes SLOW_MS after its head. */
let slow: Server;

function paceEvents(target: string) {
  return (req: { url?: string; headers: Record<string, unknown> }, body: Buffer, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', target);
    const up = httpRequest(u, { method: 'POST', headers: { ...req.headers, host: u.host } }, (answer) => {
      const parts: Buffer[] = [];
      answer.on('data', (b: Buffer) => parts.push(b));
      answer.on('end', () => {
        res.writeHead(answer.statusCode ?? 500, { 'content-type': 'text/event-stream' });
        const events = Buffer.concat(parts)
          .toString('utf8')
          .split(/(?<=\n\n)/);
        const next = (i: number): void => {
          if (i === events.length) return void res.end();
          res.write(events[i]);
          setTimeout(next, PACE_MS, i + 1);
        };
        next(0);
      });
    });
    up.end(body);
  };
}

function slowFirstToken(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  const chunk = (fields: object) =>
    `data: ${JSON.stringify({ id: 'up-1', object: 'chat.completion.chunk', created: 1, model: 'm', ...fields })}\n\n`;
  setTimeout(() => {
    res.end(
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'late' }, finish_reason: null }] }) +
        chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
        chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }) +
        'data: [DONE]\n\n',
    );
  }, SLOW_MS);
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

beforeAll(async () => {
  sim = await startProviderSim();
  const pace = paceEvents(sim.url);
  pacer = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => pace(req, Buffer.concat(parts), res));
  });
  slow = createServer((req, res) => {
    req.resume();
    req.on('end', () => slowFirstToken(res));
  });
  const [pacedUrl, slowUrl] = [await listen(pacer), await listen(slow)];
  const model = (id: string, provider: string) =>
    `  - { id: ${id}, name: ${id}, context_length: 8000, max_output_tokens: 100, created: 1, providers: [{ provider: ${provider}, model: m }], pricing: { prompt: "0.000001", completion: "0.000002" } }\n`;
  stack = await startProxyStack({
    deps: {
      catalog: parseCatalog(
        `providers:
  - { name: sim, base_url: "${sim.baseUrl}", simulator: true }
  - { name: sim-anthropic, base_url: "${sim.baseUrl}", format: anthropic, simulator: true }
  - { name: sim-responses, base_url: "${sim.baseUrl}", responses: true, simulator: true }
  - { name: paced-responses, base_url: "${pacedUrl}", responses: true, simulator: true }
  - { name: slow, base_url: "${slowUrl}" }
models:
${model('t/openai', 'sim')}${model('t/claude', 'sim-anthropic')}${model('t/gpt', 'sim-responses')}${model('t/gpt-paced', 'paced-responses')}${model('t/slow', 'slow')}`,
        { env: {} },
      ),
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await sim?.close();
  await new Promise<void>((r) => pacer?.close(() => r()));
  await new Promise<void>((r) => slow?.close(() => r()));
});
afterEach(() => {
  vi.restoreAllMocks();
});

interface Door {
  name: string;
  /** Models: a short answer (the provider's whole stream in one read) and a paced one. */
  model: string;
  pacedModel: string;
  request: (model: string, sim: object) => string;
  /** The first event of the answer; the event each content piece is; how the body ends. */
  start: string;
  delta: string;
  end: RegExp;
  /**
   * The provider sends its text in delta events of several tokens (the simulator's Responses API):
   * their text, not their number, is checked.
   */
  textDeltas?: boolean;
}

function requestOf(path: string, headers: Record<string, string>, body: object): string {
  const text = JSON.stringify(body);
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return (
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${lines.join('')}` +
    `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
  );
}

const prompt = 'When does the head arrive?';
const messages = (model: string, sim: object) =>
  requestOf(
    '/api/v1/messages',
    { 'x-api-key': stack.inference.key, 'anthropic-version': '2023-06-01' },
    { model, stream: true, max_tokens: 64, messages: [{ role: 'user', content: prompt }], sim },
  );
const responses = (model: string, sim: object) =>
  requestOf(
    '/api/v1/responses',
    { authorization: `Bearer ${stack.inference.key}` },
    { model, stream: true, input: prompt, sim },
  );
const MESSAGES = {
  request: messages,
  start: 'event: message_start\n',
  delta: 'event: content_block_delta\n',
  end: /event: message_stop\ndata: \{"type":"message_stop"\}\n\n$/,
};
const RESPONSES = {
  request: responses,
  start: 'event: response.created\n',
  delta: 'event: response.output_text.delta\n',
  end: /event: response\.completed\ndata: \{[^\n]*\}\n\n$/,
};
const DOORS: Door[] = [
  { name: 'Messages, translated', model: 't/openai', pacedModel: 't/openai', ...MESSAGES },
  { name: 'Messages, native', model: 't/claude', pacedModel: 't/claude', ...MESSAGES },
  { name: 'Responses, translated', model: 't/openai', pacedModel: 't/openai', ...RESPONSES },
  { name: 'Responses, native', model: 't/gpt', pacedModel: 't/gpt-paced', ...RESPONSES, textDeltas: true },
];

const proxyWrites = () => relayWrites(Number(new URL(stack.proxy.url).port));
/** The delta events of a body of `tokens` content tokens: one per token, or (`textDeltas`) the whole text. */
function checkDeltas(door: Door, body: string, tokens: number): void {
  const events = body.split('\n\n').filter((e) => e.startsWith(door.delta));
  if (!door.textDeltas) {
    expect(events.length, body).toBe(tokens);
    return;
  }
  const data = (e: string) => JSON.parse(e.slice(e.indexOf('data: ') + 6));
  const done = body.split('\n\n').find((e) => e.startsWith('event: response.output_text.done\n'));
  expect(events.length, body).toBeGreaterThan(0);
  expect(events.map((e) => data(e).delta).join('')).toBe(data(done ?? '').text);
}

/**
 * Every write of the answer framed by the door and made to the socket itself — none through
 * `res.write`, none inside `res.end` — the first one the head with the door's first event.
 */
function expectDirectFromTheHead(w: RelayWrites, start: string): void {
  expect(w.res, JSON.stringify(w)).toBe(0);
  expect(w.inEnd).toBe(0);
  expect(w.first).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n[0-9a-f]+\r\n/);
  expect(w.first).toContain(start);
}

describe.each(DOORS)('the writes of a streamed $name answer', (door) => {
  it('leave as one socket write from the head to the terminator when the provider sent it whole', async () => {
    const writes = proxyWrites();
    const reads = await rawReads(stack.proxy.url, door.request(door.model, { completion_tokens: 3 }));
    expect(writes()).toMatchObject({ res: 0, direct: 1, inEnd: 0 });
    expect(writes().last).toMatch(/^HTTP\/1\.1 200 [\s\S]*\n\n\r\n0\r\n\r\n$/);
    const body = dechunk(Buffer.concat(reads.map((r) => r.bytes)));
    expect(body.startsWith(door.start), body).toBe(true);
    expect(body).toMatch(door.end);
    checkDeltas(door, body, 3);
  });

  it('leave chunk by chunk when paced: the head with the first events, the last chunk with the terminator', async () => {
    const writes = proxyWrites();
    const reads = await rawReads(
      stack.proxy.url,
      door.request(door.pacedModel, { completion_tokens: 6, inter_token_ms: PACE_MS }),
    );
    const w = writes();
    expectDirectFromTheHead(w, door.start);
    expect(w.direct).toBeGreaterThanOrEqual(3);
    expect(w.last).toMatch(/\n\n\r\n0\r\n\r\n$/);
    const body = dechunk(Buffer.concat(reads.map((r) => r.bytes)));
    expect(body.startsWith(door.start), body).toBe(true);
    expect(body).toMatch(door.end);
    checkDeltas(door, body, 6);
  });
});

describe.each([
  { name: 'Messages', ...MESSAGES },
  { name: 'Responses', ...RESPONSES },
])('a translated $name answer whose first token is slow', (door) => {
  it('sends its head and its opening events at once, in one socket write', async () => {
    const writes = proxyWrites();
    const reads = await rawReads(stack.proxy.url, door.request('t/slow', {}));
    const w = writes();
    // The head and the opening events as one write, then the rest of the answer with the terminator.
    expectDirectFromTheHead(w, door.start);
    expect(w.direct).toBe(2);
    expect(w.first).not.toContain(door.delta);
    const head = reads[0];
    expect(head?.text).toContain(door.start);
    const late = reads.find((r) => r.text.includes(door.delta));
    expect(late, JSON.stringify(reads)).toBeDefined();
    // Not held back until the first token.
    expect((late?.at ?? 0) - (head?.at ?? 0)).toBeGreaterThan(SLOW_MS / 2);
    const body = dechunk(Buffer.concat(reads.map((r) => r.bytes)));
    expect(body).toMatch(door.end);
    expect(body).toContain('late');
  });
});
