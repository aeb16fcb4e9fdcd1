import type { Server } from 'node:http';
import { AppError } from '@tollgate/errors';
import { closeServer, errorHandler, listen } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesErrorHandler } from './routes';

// The Messages routes on express (count_tokens) answer errors through the one express error handler,
// rendered in Anthropic's shape with the request id; the other routes keep the standard envelope.
describe('messagesErrorHandler', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const logger = createLogger({ name: 'messages-errors', level: 'silent' });
    const app = express();
    const throwing =
      (err: unknown): express.RequestHandler =>
      (_req, res) => {
        res.setHeader('x-request-id', 'gen-test-1');
        throw err;
      };
    app.get(
      '/messages/limit',
      throwing(new AppError('key_limit_exceeded', 'Key limit reached')),
      messagesErrorHandler(logger),
    );
    app.get(
      '/messages/bad',
      throwing(new AppError('bad_request', 'messages: expected an array')),
      messagesErrorHandler(logger),
    );
    app.get('/messages/boom', throwing(new Error('secret internals')), messagesErrorHandler(logger));
    app.get('/other/boom', throwing(new Error('secret internals')));
    app.use(errorHandler(logger));
    server = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => closeServer(server));

  const get = async (path: string) => {
    const res = await fetch(base + path);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('renders a known error in Anthropic’s shape with the request id (a limit is 402 billing_error)', async () => {
    expect(await get('/messages/limit')).toEqual({
      status: 402,
      body: {
        type: 'error',
        error: { type: 'billing_error', message: 'Key limit reached' },
        request_id: 'gen-test-1',
      },
    });
    expect(await get('/messages/bad')).toEqual({
      status: 400,
      body: {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'messages: expected an array' },
        request_id: 'gen-test-1',
      },
    });
  });

  it('answers anything unexpected as a generic 500 api_error, never its text', async () => {
    expect(await get('/messages/boom')).toEqual({
      status: 500,
      body: {
        type: 'error',
        error: { type: 'api_error', message: 'Internal server error' },
        request_id: 'gen-test-1',
      },
    });
  });

  it('leaves the standard envelope to every other route', async () => {
    const { status, body } = await get('/other/boom');
    expect(status).toBe(500);
    expect(body).toEqual({ error: expect.objectContaining({ message: 'Internal server error' }) });
  });
});
