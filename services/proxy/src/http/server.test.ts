import { execFileSync } from 'node:child_process';
import type { Server } from 'node:http';
import { type AddressInfo, connect, createServer as createNetServer } from 'node:net';
import { createLogger } from '@tollgate/logger';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProxyAppParts } from './app';
import { listenWithLimits, type ServerConfig } from './server';

const logger = createLogger({ name: 'test', level: 'silent' });
/** An app that answers every request 200 "ok" (no front door matches). */
const parts = {
  app: (_req: unknown, res: { end(body: string): void }) => res.end('ok'),
  doors: { match: () => null },
} as unknown as Pick<ProxyAppParts, 'app' | 'doors'>;

function config(over: Partial<ServerConfig>): ServerConfig {
  return {
    PORT: 0,
    HOST: '127.0.0.1',
    SERVER_HEADERS_TIMEOUT_MS: 10_000,
    SERVER_REQUEST_TIMEOUT_MS: 60_000,
    SERVER_KEEPALIVE_TIMEOUT_MS: 65_000,
    SERVER_SOCKET_TIMEOUT_MS: 180_000,
    SERVER_MAX_CONNECTIONS: 0,
    SERVER_LISTEN_BACKLOG: 4096,
    SERVER_ACCEPT_SOCKETS: 8,
    ...over,
  };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

async function start(over: Partial<ServerConfig>, openFiles: number | null = null): Promise<Server> {
  const server = await listenWithLimits(parts, config(over), logger, { openFiles });
  servers.push(server);
  return server;
}

const portOf = (s: Server) => (s.address() as AddressInfo).port;

/**
 * Blocks this process's event loop while a child process opens `n` connections to `port` (the kernel
 * completes every handshake and queues them for accept) and exits; then counts the event-loop turns
 * until the server has seen all `n` connections.
 */
async function turnsToAccept(server: Server, n: number): Promise<number> {
  let seen = 0;
  server.on('connection', () => {
    seen++;
  });
  const script = `
    const net = require('node:net');
    let open = 0;
    for (let i = 0; i < ${n}; i++)
      net.connect(${portOf(server)}, '127.0.0.1').once('connect', () => { if (++open === ${n}) process.exit(0); });`;
  execFileSync(process.execPath, ['-e', script], { timeout: 30_000 });
  expect(seen).toBe(0);
  return new Promise<number>((resolve) => {
    let turns = 0;
    const turn = () => {
      turns++;
      if (seen >= n) resolve(turns);
      else setImmediate(turn);
    };
    setImmediate(turn);
  });
}

/** One HTTP/1.1 request on a new connection that stays open; resolves with the status line. */
function held(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    s.once('error', reject);
    s.once('data', (d: Buffer) => resolve(d.toString('latin1').split('\r\n')[0] as string));
    s.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  });
}

describe('the listening sockets (SERVER_ACCEPT_SOCKETS)', () => {
  it('takes a queued burst in far fewer event-loop turns with 8 sockets than with 1', async () => {
    const n = 200;
    // libuv accepts one connection per listening socket per wake-up: one socket needs a turn each.
    const one = await turnsToAccept(await start({ SERVER_ACCEPT_SOCKETS: 1 }), n);
    const eight = await turnsToAccept(await start({ SERVER_ACCEPT_SOCKETS: 8 }), n);
    expect(one).toBeGreaterThanOrEqual(n);
    expect(eight).toBeLessThan(n / 3);
  });

  it('caps the connections of all its sockets together: past the cap, 503', async () => {
    const server = await start({ SERVER_ACCEPT_SOCKETS: 8, SERVER_MAX_CONNECTIONS: 12 });
    const port = portOf(server);
    const served: string[] = [];
    for (let i = 0; i < 12; i++) served.push(await held(port));
    expect(served).toEqual(Array(12).fill('HTTP/1.1 200 OK'));
    const past: string[] = [];
    for (let i = 0; i < 6; i++) past.push(await held(port));
    expect(past).toEqual(Array(6).fill('HTTP/1.1 503 Service Unavailable'));
  });

  it('refuses a port another process listens on, and frees it whole on close', async () => {
    const server = await start({ SERVER_ACCEPT_SOCKETS: 8 });
    const port = portOf(server);
    await expect(start({ SERVER_ACCEPT_SOCKETS: 8, PORT: port })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    servers.splice(servers.indexOf(server), 1);
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    // No socket of the 8 is left: a plain bind (no SO_REUSEPORT) takes the port.
    const plain = createNetServer();
    await new Promise<void>((resolve, reject) => {
      plain.once('error', reject);
      plain.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve());
    });
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  });
});
