import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';

/**
 * Issue 14: what Node's HTTP parser rejects (headers too large, a malformed request line, bad
 * framing, headers that never finish) is answered like every other error: a complete response with
 * the JSON error envelope and `connection: close` — not Node's bare `HTTP/1.1 400 Bad Request`.
 */
let stack: ProxyStack;

beforeAll(async () => {
  stack = await startProxyStack({ env: { SERVER_HEADERS_TIMEOUT_MS: '1000' } });
});
afterAll(async () => {
  await stack?.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `bytes` on a new connection and reads everything the server sends until it closes. */
function raw(bytes: string, timeoutMs = 5_000): Promise<RawAnswer> {
  const { port } = new URL(stack.proxy.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = connect(Number(port), '127.0.0.1', () => s.write(bytes));
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`connection still open after ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {}); // a reset after the answer is fine: the answer is what is checked
    s.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

function expectEnvelope(answer: RawAnswer, status: number, errorType: string) {
  expect(answer.status).toBe(status);
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const json = JSON.parse(answer.body) as { error: { code: number; message: string; metadata: object } };
  expect(json.error.code).toBe(status);
  expect(json.error.metadata).toEqual({ error_type: errorType });
  expect(typeof json.error.message).toBe('string');
}

describe('HTTP parser errors on the public edge', () => {
  it('answers oversized request headers with 431 in the error envelope', async () => {
    const answer = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectEnvelope(answer, 431, 'payload_too_large');
    expect(answer.body).toContain('Request headers are too large');
  });

  it('answers a garbage request line with 400 in the error envelope', async () => {
    const answer = await raw('THIS IS NOT HTTP\r\n\r\n');
    expectEnvelope(answer, 400, 'bad_request');
  });

  it('answers a body without valid framing (Content-Length not a number) with 400 in the envelope', async () => {
    const answer = await raw(
      'POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{"model":1}',
    );
    expectEnvelope(answer, 400, 'bad_request');
  });

  it('answers bad chunked framing after the response to the request it belongs to', async () => {
    const { port } = new URL(stack.proxy.url);
    const text = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      const s = connect(Number(port), '127.0.0.1', () =>
        s.write(
          'POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        ),
      );
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('error', () => {});
      s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    // The route answers first (no key: 401); the framing error follows as its own complete response.
    expect(text.indexOf('HTTP/1.1 401 ')).toBe(0);
    const last = text.slice(text.lastIndexOf('HTTP/1.1 '));
    expect(last).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(last.split('\r\n\r\n')[1]!).error.metadata.error_type).toBe('bad_request');
  });

  it('answers headers that never finish with 408 in the error envelope', async () => {
    const answer = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\n', 8_000);
    expectEnvelope(answer, 408, 'timeout');
  });

  it('keeps serving other clients while bad requests arrive', async () => {
    const [bad, ok] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => raw('\x00\x01garbage\r\n\r\n'))),
      fetch(`${stack.api}/models`, { headers: bearer(stack.inference) }),
    ]);
    for (const answer of bad) expectEnvelope(answer, 400, 'bad_request');
    expect(ok.status).toBe(200);
    expect((await fetch(`${stack.proxy.url}/healthz`)).status).toBe(200);
  });
});
