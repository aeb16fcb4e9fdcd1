import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseCatalog } from '@tollgate/catalog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';

// The stream relay works on the provider's bytes (providers/sse.ts SseBytes, ChunkBytes, byte-out.ts). A provider
// whose events straddle its writes at awkward places (inside a multi-byte character, between CR and
// LF, inside `"usage":null` and `"model":"`), mixes chunk layouts (the byte path's and the string
// path's) and line endings still reaches the client as the spec's chunks: id and model rewritten,
// `usage: null` dropped, content byte for byte, the usage chunk completed last before [DONE].

let stack: ProxyStack;
let provider: Server;

const chunk = (fields: string) => `{"id":"up-7","object":"chat.completion.chunk","created":1,${fields}}`;
const EVENTS = [
  // OpenAI's layout with include_usage: the byte path.
  `data: ${chunk('"model":"m-up","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null')}\n\n`,
  `data: ${chunk('"model":"m-up","choices":[{"index":0,"delta":{"content":"hé€😀 "},"finish_reason":null}],"usage":null')}\r\n\r\n`,
  // Spaces around the null usage, a comment and CR line endings: the string path.
  `: keep-alive\r\rdata: ${chunk('"model":"m-up","choices":[{"index":0,"delta":{"content":"\\"usage\\":null "},"finish_reason":null}], "usage" : null')}\r\r`,
  // The member first, then the model.
  `data: ${chunk('"usage":null,"model":"m-up","choices":[{"index":0,"delta":{"content":"end"},"finish_reason":null}]')}\n\n`,
  `data: ${chunk('"model":"m-up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null')}\n\n`,
  `data: ${chunk('"model":"m-up","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}')}\n\n`,
  'data: [DONE]\n\n',
];
const BODY = Buffer.from(EVENTS.join(''));

/** Writes BODY in pieces cut at `cuts` (byte offsets), a few ms apart so they arrive as separate reads. */
function sendCut(res: ServerResponse, cuts: number[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const bounds = [0, ...cuts, BODY.length];
  let i = 0;
  const next = () => {
    const piece = BODY.subarray(bounds[i], bounds[i + 1]);
    i++;
    if (i === bounds.length - 1) res.end(piece);
    else {
      res.write(piece);
      setTimeout(next, 3);
    }
  };
  next();
}

/** Byte offsets that cut inside the characters and keys named above. */
function awkwardCuts(): number[] {
  const at = (needle: string, plus: number) => BODY.indexOf(needle) + plus;
  return [
    at('€', 1), // inside a 3-byte character
    at('😀', 2), // inside a 4-byte character
    at('\r\n\r\n', 1), // between CR and LF
    at('"usage":null', 4),
    at('"model":"m-up"', 3),
    at('\r\r', 1), // between two lone CRs
    at('"finish_reason":"stop"', 5),
  ].sort((a, b) => a - b);
}

let cuts: number[] = [];
beforeAll(async () => {
  provider = createServer((req, res) => {
    req.resume();
    req.on('end', () => sendCut(res, cuts));
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
  stack = await startProxyStack({
    deps: {
      catalog: parseCatalog(
        `
providers:
  - { name: cut, base_url: "${url}" }
models:
  - { id: t/cut, name: cut, context_length: 8000, max_output_tokens: 100, created: 1, providers: [{ provider: cut, model: m-up }], pricing: { prompt: "0.000001", completion: "0.000002" } }
`,
        { env: {} },
      ),
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await new Promise<void>((r) => provider?.close(() => r()));
});

async function stream() {
  return readSse(`${stack.proxy.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 't/cut', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('the stream relay on bytes', () => {
  for (const [name, pieces] of [
    ['in one read', () => []],
    ['cut at awkward places', awkwardCuts],
    ['one byte per read for the first 300 bytes', () => Array.from({ length: 300 }, (_, i) => i + 1)],
  ] as const) {
    it(`relays the provider's chunks rewritten, content intact, usage last (${name})`, async () => {
      cuts = pieces();
      const r = await stream();
      expect(r.status).toBe(200);
      const id = r.headers.get('x-generation-id');
      expect(id).toBeTruthy();
      expect(r.data.at(-1)).toBe('[DONE]');
      const chunks = r.chunks as Json[];
      const content = chunks.slice(0, -1);
      expect(content).toHaveLength(5);
      for (const c of content) {
        expect(c.id, JSON.stringify(c)).toBe(id);
        expect(c.model).toBe('t/cut');
        expect(c.object).toBe('chat.completion.chunk');
        expect('usage' in c, JSON.stringify(c)).toBe(false);
      }
      expect(content.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('hé€😀 "usage":null end');
      expect(content.at(-1).choices[0].finish_reason).toBe('stop');
      const usage = chunks.at(-1);
      expect(usage.id).toBe(id);
      expect(usage.model).toBe('t/cut');
      expect(usage.choices).toEqual([]);
      expect(usage.usage).toMatchObject({
        prompt_tokens: 11,
        completion_tokens: 4,
        total_tokens: 15,
        is_byok: false,
        cost: 0.000019,
      });
    });
  }
});
