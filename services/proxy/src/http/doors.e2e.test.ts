import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { loadCatalog } from '@tollgate/catalog';
import { createLogger } from '@tollgate/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Json } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { configEnv, DEFAULT_CATALOG_PATH, loadConfig } from '../config';
import type { SpendGuard } from '../spend/guard';
import { type ProxyHandle, startProxy } from './app';

/**
 * The front doors are served from the request listener, never by express (http/doors.ts). These pin
 * what a client of the chat door sees there: the answers express gave (both mounts, request id,
 * errors in the envelope, body limit, scope, metrics, draining), the spellings express also routed
 * there, and that everything else still reaches express.
 */
let stack: ProxyStack;
const BODY_LIMIT_BYTES = 4096;
const model = 'openai/gpt-4o-mini';
const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
const GEN_ID = /^gen-\d+-[A-Za-z0-9]{20}$/;

beforeAll(async () => {
  stack = await startProxyStack({ env: { BODY_LIMIT: `${BODY_LIMIT_BYTES}b` } });
});
afterAll(async () => {
  await stack?.close();
});

async function post(path: string, init: { headers?: Record<string, string>; body?: string } = {}) {
  const res = await fetch(`${stack.proxy.url}${path}`, {
    method: 'POST',
    headers: init.headers ?? bearer(stack.inference),
    body: init.body ?? chatBody(),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as Json };
}

/** One raw HTTP/1.1 exchange (for framing the fetch API hides: chunked bodies, pipelining). */
function raw(port: number, bytes: string, onOpen?: () => void): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = connect(port, '127.0.0.1', () => {
      s.write(bytes);
      onOpen?.();
    });
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

const envelopeOf = (r: { json: Json }) => r.json.error as Json;

describe('the chat door, served before express', () => {
  it('answers on both mounts with a gen- request id in x-request-id, X-Generation-Id and the completion id', async () => {
    for (const path of ['/api/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions?x=1']) {
      const r = await post(path);
      expect(r.status, r.text).toBe(200);
      const id = r.headers.get('x-request-id');
      expect(id).toMatch(GEN_ID);
      expect(r.headers.get('x-generation-id')).toBe(id);
      expect(r.json.id).toBe(id);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      // A known length, not chunked: the head and the body leave in one write.
      expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(r.text));
      expect(r.headers.get('transfer-encoding')).toBeNull();
      await stack.waitForEvent(id as string);
    }
  });

  it('never takes the request id from the client', async () => {
    const r = await post('/api/v1/chat/completions', {
      headers: { ...bearer(stack.inference), 'x-request-id': 'gen-1-clientchosenid0000000' },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).not.toBe('gen-1-clientchosenid0000000');
    expect(r.headers.get('x-request-id')).toMatch(GEN_ID);
  });

  it('answers a missing or unknown key with 401 in the envelope, with the request id and a Content-Length', async () => {
    const none = await post('/api/v1/chat/completions', { headers: { 'content-type': 'application/json' } });
    expect(none.status).toBe(401);
    expect(envelopeOf(none)).toMatchObject({ code: 401, metadata: { error_type: 'unauthorized' } });
    expect(none.headers.get('x-request-id')).toMatch(GEN_ID);
    expect(none.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(none.headers.get('content-length'))).toBe(Buffer.byteLength(none.text));
    const unknown = await post('/v1/chat/completions', {
      headers: bearer(`sk-tg-v1-${'0'.repeat(64)}`),
    });
    expect(unknown.status).toBe(401);
    expect(envelopeOf(unknown)).toMatchObject({ message: 'Invalid API key' });
  });

  it('answers a management key with 403 forbidden and required_scope', async () => {
    const r = await post('/api/v1/chat/completions', { headers: bearer(stack.account.managementKey) });
    expect(r.status).toBe(403);
    expect(envelopeOf(r)).toMatchObject({
      code: 403,
      metadata: { error_type: 'forbidden', required_scope: 'inference' },
    });
  });

  it('answers invalid JSON with 400 and a compressed body with 415, in the envelope', async () => {
    const bad = await post('/api/v1/chat/completions', { body: '{"model":' });
    expect(bad.status).toBe(400);
    expect(envelopeOf(bad)).toMatchObject({
      message: 'Request body is not valid JSON',
      metadata: { error_type: 'bad_request' },
    });
    const gz = await post('/api/v1/chat/completions', {
      headers: { ...bearer(stack.inference), 'content-encoding': 'gzip' },
    });
    expect(gz.status).toBe(415);
    expect(envelopeOf(gz)).toMatchObject({ metadata: { error_type: 'unsupported_media_type' } });
  });

  it('answers a body over BODY_LIMIT with 413, declared or chunked, and keeps serving', async () => {
    const big = chatBody({ pad: 'x'.repeat(BODY_LIMIT_BYTES) });
    const declared = await post('/api/v1/chat/completions', { body: big });
    expect(declared.status).toBe(413);
    expect(envelopeOf(declared)).toMatchObject({
      code: 413,
      message: 'Request body is too large',
      metadata: { error_type: 'payload_too_large' },
    });
    const { port } = new URL(stack.proxy.url);
    const size = Buffer.byteLength(big).toString(16);
    const text = await raw(
      Number(port),
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
        `Authorization: Bearer ${stack.inference.key}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${size}\r\n${big}\r\n0\r\n\r\n`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('"error_type":"payload_too_large"');
    expect((await post('/api/v1/chat/completions')).status).toBe(200);
  });

  it('leaves other methods on the chat path to express (401 without a key, 404 in the envelope with one)', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const anonymous = await fetch(`${stack.api}/chat/completions`, { method });
      expect(anonymous.status).toBe(401);
      const res = await fetch(`${stack.api}/chat/completions`, { method, headers: bearer(stack.inference) });
      const json = (await res.json()) as Json;
      expect(res.status).toBe(404);
      expect(json.error).toMatchObject({
        message: `No route for ${method} /chat/completions`,
        metadata: { error_type: 'not_found' },
      });
      expect(res.headers.get('x-request-id')).toMatch(GEN_ID);
    }
  });

  it('serves the spellings express routed to the chat route (letter case, trailing slash, query)', async () => {
    for (const path of ['/API/V1/Chat/Completions', '/v1/chat/completions/', '/V1/Chat/Completions/?x=1']) {
      const r = await post(path);
      expect(r.status, r.text).toBe(200);
      expect(r.json.id).toBe(r.headers.get('x-request-id'));
    }
    for (const path of ['/v1/chat/completions//', '/v1/chat/completion', '/v1/chat']) {
      const r = await post(path);
      expect(r.status, `${path}: ${r.text}`).toBe(404);
    }
  });

  it('serves an absolute-form request target like its path', async () => {
    const { port } = new URL(stack.proxy.url);
    const body = chatBody();
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST http://127.0.0.1:${port}/api/v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
            `authorization: ${bearer(stack.inference).authorization}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        );
      });
      let out = '';
      socket.on('data', (d) => {
        out += d.toString();
      });
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
    });
    expect(text.startsWith('HTTP/1.1 200 '), text).toBe(true);
    expect(text).toContain('"object":"chat.completion"');
  });

  it('counts chat requests and their statuses under route="chat"', async () => {
    const count = async (status: string) => {
      const text = await stack.proxy.metrics.registry.metrics();
      const m = new RegExp(`tollgate_proxy_requests_total\\{route="chat",status="${status}"\\} (\\d+)`).exec(
        text,
      );
      return Number(m?.[1] ?? 0);
    };
    const [ok0, unauth0] = [await count('200'), await count('401')];
    await post('/api/v1/chat/completions');
    await post('/api/v1/chat/completions', { headers: { 'content-type': 'application/json' } });
    await vi.waitFor(async () => {
      expect(await count('200')).toBe(ok0 + 1);
      expect(await count('401')).toBe(unauth0 + 1);
    });
    expect(stack.proxy.inFlight()).toBe(0);
  });
});

describe('the chat door, served before express: a proxy of its own', () => {
  const lines: Json[] = [];
  let proxy: ProxyHandle;
  let failAdmission = false;
  const guard: SpendGuard = {
    async admit() {
      if (failAdmission) throw new Error('admission exploded');
      return null;
    },
    settle: async () => {},
  };

  beforeAll(async () => {
    const env = configEnv(stack.config);
    const logger = createLogger({
      name: 'proxy',
      level: 'debug',
      destination: new Writable({
        write(chunk: Buffer, _e, done) {
          for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Json);
          done();
        },
      }),
    });
    proxy = await startProxy(loadConfig({ ...env, PORT: '0', LOG_LEVEL: 'debug' }), {
      logger,
      guard,
      catalog: loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: stack.sim.url }),
    });
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('logs the access line at debug with the request id', async () => {
    const res = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: chatBody(),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get('x-request-id');
    await vi.waitFor(() =>
      expect(lines).toContainEqual(
        expect.objectContaining({
          msg: 'request finished',
          requestId: id,
          method: 'POST',
          path: '/v1/chat/completions',
          status: 200,
        }),
      ),
    );
  });

  it('answers an unexpected error with the generic 500 envelope and logs it with the request id', async () => {
    failAdmission = true;
    try {
      const res = await fetch(`${proxy.url}/api/v1/chat/completions`, {
        method: 'POST',
        headers: bearer(stack.inference),
        body: chatBody(),
      });
      const json = (await res.json()) as Json;
      expect(res.status).toBe(500);
      expect(json).toEqual({
        error: { code: 500, message: 'Internal server error', metadata: { error_type: 'internal' } },
      });
      const id = res.headers.get('x-request-id');
      expect(lines).toContainEqual(expect.objectContaining({ msg: 'unhandled error', requestId: id }));
    } finally {
      failAdmission = false;
    }
  });

  it('while draining, counts the request in flight and answers it with connection: close', async () => {
    const { port } = new URL(proxy.url);
    const stream = chatBody({ stream: true, sim: { completion_tokens: 8, inter_token_ms: 50 } });
    const plain = chatBody();
    const head = (body: string) =>
      `POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stack.inference.key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    // Two requests on one connection: the second is sent once the proxy drains, while the first (a
    // slow stream) is still being answered, so the connection is busy and stays open for it.
    let closing: Promise<void> | undefined;
    const text = await new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      const s = connect(Number(port), '127.0.0.1', () => {
        s.write(head(stream));
        void vi
          .waitFor(() => expect(proxy.inFlight()).toBeGreaterThan(0), { interval: 5 })
          .then(() => {
            closing = proxy.close();
            s.write(head(plain));
          });
      });
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('error', () => {});
      s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    await closing;
    const responses = text.split(/(?=HTTP\/1\.1 )/);
    expect(responses).toHaveLength(2);
    expect(responses[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(responses[0]).toContain('data: [DONE]');
    expect(responses[1]).toMatch(/^HTTP\/1\.1 200 /);
    expect(responses[1]?.toLowerCase()).toContain('\r\nconnection: close\r\n');
    expect(proxy.inFlight()).toBe(0);
  });
});
