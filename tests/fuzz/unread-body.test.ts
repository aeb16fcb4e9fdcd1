/**
 * Found by the fuzz run (seed 983286315, under the whole suite's load: `read ECONNRESET` on a
 * `GET /key` 5.9 s after it was sent, on a connection whose previous request was `TRACE /v1/keys/…`
 * with a 600 KB body, answered 404). An account call is forwarded to its owner with the client's body
 * streamed; when the owner answered before taking the whole body, undici stopped sending it and
 * destroyed the body stream — the client's IncomingMessage, detached from its socket first — so the
 * rest of the body was never read on a connection the answer had offered for reuse
 * (`Connection: keep-alive`). The client's next request on it was never answered; at the keep-alive
 * timeout (5 s) the server closed with the client's bytes unread: a reset. Any HTTP client that
 * reuses connections sees this, not only the fuzz client. The body is sent here in two halves 300 ms
 * apart so the owner answers while the rest is still coming, as it did under load.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack';

let stack: Stack;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

beforeAll(async () => {
  stack = await startStack({ credits: '10' });
}, 60_000);
afterAll(async () => {
  agent.destroy();
  await stack?.close();
});

interface Sent {
  status: number;
  reused: boolean;
  body: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `body` is sent in two halves 300 ms apart: the owner answers while the rest is still coming. */
function send(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Sent> {
  const url = new URL(stack.origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        agent,
        headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            reused: req.reusedSocket,
            body: Buffer.concat(parts).toString(),
          }),
        );
      },
    );
    // The keep-alive timeout (5 s) would close the connection; an answer takes milliseconds.
    req.setTimeout(4_000, () => req.destroy(new Error('no answer within 4 s')));
    req.on('error', reject);
    if (!body) {
      req.end();
      return;
    }
    req.write(body.subarray(0, body.length / 2));
    void sleep(300).then(() => req.end(body.subarray(body.length / 2)));
  });
}

describe('a body the gateway did not read to its end never stalls the connection it came on', () => {
  const big = Buffer.alloc(600_000, 'x');
  const cases: Array<[string, string, 'management' | 'none', string]> = [];
  for (const type of ['application/json', 'text/plain', ''])
    for (const [method, path, auth] of [
      ['TRACE', '/v1/keys/nul%00inside', 'management'],
      ['POST', '/api/v1/keys/00000000-0000-4000-8000-000000000000', 'management'],
      ['PATCH', '/api/v1/keys/not-a-uuid', 'management'],
      ['DELETE', '/api/v1/keys/00000000-0000-4000-8000-000000000000', 'management'],
      ['POST', '/api/v1/keys', 'management'],
      ['POST', '/api/v1/keys', 'none'],
      ['PUT', '/api/v1/models', 'management'],
      ['POST', '/api/v1/nowhere', 'management'],
      ['POST', '/api/v1/chat/completions', 'management'],
    ] as const)
      cases.push([method, path, auth, type]);
  for (const [method, path, auth, type] of cases) {
    it(`${method} ${path} (${auth}, ${type || 'no content type'}) with a 600 KB body, then GET /models on the same connection`, async () => {
      const headers: Record<string, string> = type ? { 'content-type': type } : {};
      if (auth === 'management') headers.authorization = `Bearer ${stack.account.managementKey}`;
      const first = await send(method, path, headers, big);
      expect(first.status).toBeGreaterThanOrEqual(400);
      expect(first.status).toBeLessThan(500);
      const next = await send('GET', '/api/v1/models', { authorization: `Bearer ${stack.inferenceKey}` });
      expect(next.status, next.body.slice(0, 200)).toBe(200);
    });
  }
});
