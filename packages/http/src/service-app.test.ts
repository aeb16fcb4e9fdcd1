import type { Server } from 'node:http';
import { createLogger } from '@tollgate/logger';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer, listen, REQUEST_ID_HEADER } from './index';
import { createServiceApp } from './service-app';

describe('createServiceApp (keys, billing, dashboard)', () => {
  let server: Server;
  let base: string;
  const metrics = new Registry();
  let ready = true;
  beforeAll(async () => {
    const app = createServiceApp({
      service: 'probe',
      logger: createLogger({ name: 'probe', level: 'silent' }),
      readiness: {
        db: async () => {
          if (!ready) throw new Error('down');
        },
      },
      metrics,
      jsonLimit: '1kb',
      before: [
        (_req, res, next) => {
          res.setHeader('x-before', 'yes');
          next();
        },
      ],
      routes(a) {
        a.post('/echo', (req, res) => {
          res.json({ body: req.body });
        });
        a.get('/boom', () => {
          throw new Error('boom');
        });
      },
    });
    server = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => closeServer(server));

  const post = (body: string) =>
    fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  it('answers health and readiness, with the request id and the `before` middleware, no x-powered-by', async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(health.headers.get('x-powered-by')).toBeNull();
    expect(health.headers.get(REQUEST_ID_HEADER)).toBeTruthy();
    expect(health.headers.get('x-before')).toBe('yes');
    ready = false;
    const readyz = await fetch(`${base}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toEqual({ status: 'unavailable', checks: { db: 'unavailable' } });
    ready = true;
  });

  it('parses JSON bodies up to the limit; beyond it, bad JSON, unknown routes and errors answer in the envelope', async () => {
    expect(await (await post('{"a":1}')).json()).toEqual({ body: { a: 1 } });
    const big = await post(JSON.stringify({ a: 'x'.repeat(2000) }));
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: 413 } });
    const bad = await post('{');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 400 } });
    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 404 } });
    const boom = await fetch(`${base}/boom`);
    expect(boom.status).toBe(500);
    expect(JSON.stringify(await boom.json())).not.toContain('boom');
  });

  it('counts requests as tollgate_<service>_http_*', async () => {
    await fetch(`${base}/healthz`);
    expect(await metrics.metrics()).toMatch(/^tollgate_probe_http_requests_total\{/m);
  });
});
