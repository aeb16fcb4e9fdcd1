import type { Server } from 'node:http';
import { connect } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientErrorFor, closeServer, listen } from './index';

describe('clientErrorFor', () => {
  it('maps parser errors to envelope errors and leaves socket failures unanswered', () => {
    expect(clientErrorFor('HPE_HEADER_OVERFLOW')?.toEnvelope()).toEqual({
      error: {
        code: 431,
        message: 'Request headers are too large',
        metadata: { error_type: 'payload_too_large' },
      },
    });
    expect(clientErrorFor('HPE_INVALID_METHOD')?.status).toBe(400);
    expect(clientErrorFor('HPE_CHUNK_EXTENSIONS_OVERFLOW')?.status).toBe(413);
    expect(clientErrorFor('ERR_HTTP_REQUEST_TIMEOUT')?.status).toBe(408);
    expect(clientErrorFor('ECONNRESET')).toBeNull();
    expect(clientErrorFor(undefined)).toBeNull();
  });
});

describe('listen (the internal services) answers parser errors in the envelope', () => {
  let server: Server;
  beforeAll(async () => {
    const app = express();
    app.get('/ok', (_req, res) => {
      res.json({ ok: true });
    });
    server = await listen(app, 0, '127.0.0.1');
  });
  afterAll(() => closeServer(server));

  const send = (bytes: string) =>
    new Promise<string>((resolve) => {
      const { port } = server.address() as { port: number };
      const chunks: Buffer[] = [];
      const s = connect(port, '127.0.0.1', () => s.write(bytes));
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('error', () => {});
      s.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });

  it('a malformed request line gets 400 with the envelope and connection: close', async () => {
    const text = await send('NOT HTTP AT ALL\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(text).toMatch(/\r\nconnection: close\r\n/);
    expect(JSON.parse(text.split('\r\n\r\n')[1]!)).toEqual({
      error: { code: 400, message: 'Malformed HTTP request', metadata: { error_type: 'bad_request' } },
    });
  });

  it('a request after a good one on the same connection still gets its answer first', async () => {
    const text = await send('GET /ok HTTP/1.1\r\nHost: x\r\n\r\nBROKEN\r\n\r\n');
    expect(text.indexOf('HTTP/1.1 200 OK')).toBe(0);
    expect(text).toContain('{"ok":true}');
    expect(text).toContain('HTTP/1.1 400 Bad Request');
  });
});
