import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One delivery a receiver got: its headers, its body as text, when it arrived (Date.now()). */
export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A local webhook endpoint for the alert tests: records every request and answers `status`. Started
 * on a free port (or `port`), it can be stopped and started again on the same one.
 */
export class WebhookReceiver {
  readonly got: Delivery[] = [];
  #server: Server | null = null;
  #port = 0;

  constructor(private readonly status = 200) {}

  /** The address of `path` on this receiver (after `start`). */
  url(path: string): string {
    return `http://127.0.0.1:${this.#port}${path}`;
  }

  async start(port = this.#port): Promise<void> {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        this.got.push({ headers: req.headers, body, at: Date.now() });
        res.statusCode = this.status;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}
