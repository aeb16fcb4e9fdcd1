/**
 * The callers' side of every internal contract goes through this client: these tests pin what a caller
 * gets for each kind of answer, against a real HTTP server standing in for the owner.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import {
  devServiceSigner,
  devServiceVerifier,
  SERVICE_TOKEN_HEADER,
  serviceTokenSource,
} from '@tollgate/auth';
import { keysUsage, resolveKey } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { createLogger } from '@tollgate/logger';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withRequestId } from './request-context';
import { createServiceClient, type ServiceClient } from './service-client';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let handler: Handler;
const seen: IncomingMessage[] = [];
let server: Server;
let client: ServiceClient;
const logLines: Array<Record<string, unknown>> = [];

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push(req);
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const logger = createLogger({
    name: 'client-test',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        for (const l of chunk.toString().split('\n')) if (l) logLines.push(JSON.parse(l));
        done();
      },
    }),
  });
  client = createServiceClient({
    service: 'keys',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token: serviceTokenSource(devServiceSigner('proxy'), 'keys'),
    // Long enough for a cold first call (signing key import, JIT) on a loaded 2-core host (300 ms
    // failed there); the deadline case below answers after twice as long.
    timeoutMs: 1_500,
    logger,
  });
});
afterAll(async () => {
  await client?.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen.length = 0;
  logLines.length = 0;
});

const resolve = (o: { nullOn404?: boolean } = {}) =>
  client.call({
    method: 'POST',
    path: resolveKey.path,
    body: { digest: 'a'.repeat(64) },
    response: resolveKey.response,
    ...o,
  });

const record = {
  id: 'k',
  accountId: 'a',
  scope: 'inference',
  disabled: false,
  revoked: false,
  limit: null,
  limitReset: null,
  version: 3,
};

describe('service client', () => {
  it('sends a service token, JSON and the current request id; parses the answer with the contract', async () => {
    handler = (_req, res, body) => json(res, 200, { data: { ...record, echo: JSON.parse(body) } });
    const answer = await withRequestId('gen-1-abcdefghijABCDEFGHIJ', () => resolve());
    expect(answer.data).toEqual(record); // unknown fields stripped by the contract
    const req = seen[0];
    expect(await devServiceVerifier('keys').verify(String(req?.headers[SERVICE_TOKEN_HEADER]))).toEqual({
      kind: 'service',
      caller: 'proxy',
    });
    expect(req?.headers['x-request-id']).toBe('gen-1-abcdefghijABCDEFGHIJ');
    expect(req?.headers['content-type']).toBe('application/json');
  });

  it('refuses an answer larger than maxResponseBytes with a 503 (the body is not read whole)', async () => {
    const small = createServiceClient({
      service: 'billing',
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: serviceTokenSource(devServiceSigner('dashboard'), 'billing'),
      timeoutMs: 2000,
      maxResponseBytes: 64 * 1024,
    });
    try {
      handler = (_req, res) => json(res, 200, { data: { ...record, padding: 'x'.repeat(200 * 1024) } });
      await expect(
        small.call({ method: 'POST', path: resolveKey.path, body: {}, response: resolveKey.response }),
      ).rejects.toMatchObject({ type: 'service_unavailable' });
      handler = (_req, res) => json(res, 200, { data: { ...record, padding: 'x'.repeat(1024) } });
      const ok = await small.call({
        method: 'POST',
        path: resolveKey.path,
        body: {},
        response: resolveKey.response,
      });
      expect(ok.data).toEqual(record);
    } finally {
      await small.close();
    }
  });

  it('answers null for 404 when asked to', async () => {
    handler = (_req, res) =>
      json(res, 404, { error: { code: 404, message: 'x', metadata: { error_type: 'not_found' } } });
    expect(await resolve({ nullOn404: true })).toBeNull();
    await expect(resolve()).rejects.toMatchObject({ status: 404, type: 'not_found' });
  });

  it("relays the owner's 4xx envelope as the same AppError", async () => {
    handler = (_req, res) =>
      json(res, 409, {
        error: { code: 409, message: 'key is revoked', metadata: { error_type: 'conflict', hash: 'h' } },
      });
    const err = await resolve().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).toEnvelope()).toEqual({
      error: { code: 409, message: 'key is revoked', metadata: { error_type: 'conflict', hash: 'h' } },
    });
  });

  it('turns an answer outside the contract, a 5xx, a deadline and a refused connection into a bare 503, logging the detail', async () => {
    const cases: Handler[] = [
      (_req, res) => json(res, 200, { data: { ...record, scope: 'root' } }),
      (_req, res) =>
        json(res, 500, {
          error: { code: 500, message: 'db password wrong', metadata: { error_type: 'internal' } },
        }),
      (_req, res) => json(res, 200, 'not json at all'),
      (_req, res) => setTimeout(() => json(res, 200, { data: record }), 3_000),
    ];
    for (const h of cases) {
      handler = h;
      const err = (await withRequestId('rid-503', () => resolve()).catch((e: unknown) => e)) as AppError;
      expect(err.toEnvelope()).toEqual({
        error: {
          code: 503,
          message: 'The keys service is unavailable, try again shortly',
          metadata: { error_type: 'service_unavailable', service: 'keys' },
        },
      });
    }
    expect(
      logLines.filter((l) => l.msg === 'internal call failed' && l.requestId === 'rid-503'),
    ).toHaveLength(4);
    const refused = createServiceClient({ service: 'billing', url: 'http://127.0.0.1:9', token: () => 't' });
    await expect(
      refused.call({
        method: 'POST',
        path: keysUsage.path,
        body: { keys: [] },
        response: keysUsage.response,
      }),
    ).rejects.toMatchObject({ status: 503, metadata: { service: 'billing' } });
    await refused.close();
  });

  it("ownerErrors 'unavailable' hides even the owner's 4xx", async () => {
    const strict = createServiceClient({
      service: 'billing',
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: () => 't',
      ownerErrors: 'unavailable',
      unavailableMessage: 'Usage figures are unavailable',
    });
    handler = (_req, res) =>
      json(res, 400, {
        error: { code: 400, message: 'keys.0.id: bad', metadata: { error_type: 'bad_request' } },
      });
    await expect(
      strict.call({ method: 'POST', path: keysUsage.path, body: { keys: [] }, response: keysUsage.response }),
    ).rejects.toMatchObject({ status: 503, message: 'Usage figures are unavailable' });
    await strict.close();
  });
});
