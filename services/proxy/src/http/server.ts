import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  type AddressInfo,
  createServer as createNetServer,
  type ListenOptions,
  type Server as NetServer,
} from 'node:net';
import { answerClientErrors } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { ProxyConfig } from '../config';
import type { ProxyAppParts } from './app';
import { capConnections, connectionBudget, openFilesLimit } from './connection-cap';

/**
 * The public server with its edge deadlines and connection cap (docs/operations.md "Security"):
 * headers and whole-request deadlines (checked every quarter of the headers deadline, ≥ 250 ms),
 * keep-alive idle time, socket inactivity while a request is open, and the connection cap
 * (SERVER_MAX_CONNECTIONS and the open-files limit, see connection-cap.ts: the excess gets 503),
 * the listen backlog (SERVER_LISTEN_BACKLOG: a burst of connections queues instead of being dropped)
 * and the listening sockets (SERVER_ACCEPT_SOCKETS, `acceptSockets`).
 */
/** What the server takes of the proxy's configuration. */
export type ServerConfig = Pick<
  ProxyConfig,
  | 'PORT'
  | 'HOST'
  | 'SERVER_HEADERS_TIMEOUT_MS'
  | 'SERVER_REQUEST_TIMEOUT_MS'
  | 'SERVER_KEEPALIVE_TIMEOUT_MS'
  | 'SERVER_SOCKET_TIMEOUT_MS'
  | 'SERVER_MAX_CONNECTIONS'
  | 'SERVER_LISTEN_BACKLOG'
  | 'SERVER_ACCEPT_SOCKETS'
>;

export async function listenWithLimits(
  parts: Pick<ProxyAppParts, 'app' | 'doors'>,
  config: ServerConfig,
  logger: Logger,
  limits: { openFiles?: number | null; upstreamSockets?: number } = {},
): Promise<Server> {
  const { app, doors } = parts;
  const server = createServer(
    {
      headersTimeout: config.SERVER_HEADERS_TIMEOUT_MS,
      requestTimeout: config.SERVER_REQUEST_TIMEOUT_MS,
      keepAliveTimeout: config.SERVER_KEEPALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: Math.max(250, Math.floor(config.SERVER_HEADERS_TIMEOUT_MS / 4)),
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const route = doors.match(req);
      if (route !== null) doors.serve(route, req, res);
      else app(req, res);
    },
  );
  server.setTimeout(config.SERVER_SOCKET_TIMEOUT_MS);
  answerClientErrors(server, logger);
  const openFiles = limits.openFiles === undefined ? openFilesLimit() : limits.openFiles;
  const budget = connectionBudget(config.SERVER_MAX_CONNECTIONS, openFiles, limits.upstreamSockets);
  const feeders = Array.from({ length: config.SERVER_ACCEPT_SOCKETS - 1 }, () =>
    createNetServer({ noDelay: true }, (socket) => server.emit('connection', socket)),
  );
  capConnections(server, budget, logger, feeders);
  logger.debug({ ...budget, openFiles, acceptSockets: feeders.length + 1 }, 'connection cap');
  await acceptSockets(server, feeders, config);
  return server;
}

/**
 * Listens on the port with `1 + feeders.length` sockets (SO_REUSEPORT: the kernel spreads new
 * connections across them), the feeders handing each connection to `server` (its cap, then its HTTP
 * parser). libuv accepts one connection per listening socket per event-loop wake-up (strace: 500
 * queued connections, 500 accept4 each after its own epoll_pwait; with 8 sockets 500 in 83). A
 * process busy relaying streams wakes up every few milliseconds with hundreds of reads to handle, so
 * one socket took a burst of agents' streams at a few hundred connections a second while the rest
 * waited in the kernel's queue for their first byte (issue 30); k sockets take up to k per wake-up.
 *
 * A cluster worker listens on its own sockets of the port, so the primary accepts and hands over none.
 * A single process first checks the port is free (a plain bind): with SO_REUSEPORT a second process
 * on the same port would otherwise share its connections instead of failing with EADDRINUSE.
 * `server.close()` closes the feeders too and calls back once all have closed.
 */
async function acceptSockets(server: Server, feeders: NetServer[], config: ServerConfig): Promise<void> {
  const shared = cluster.isWorker || feeders.length > 0;
  if (shared && !cluster.isWorker && config.PORT !== 0) await probeFree(config.PORT, config.HOST);
  const options = {
    host: config.HOST,
    backlog: config.SERVER_LISTEN_BACKLOG,
    ...(shared ? { exclusive: true, reusePort: true } : {}),
  };
  await listenOn(server, { ...options, port: config.PORT });
  const { port } = server.address() as AddressInfo;
  try {
    for (const feeder of feeders) await listenOn(feeder, { ...options, port });
  } catch (err) {
    for (const s of [server, ...feeders]) if (s.listening) s.close();
    throw err;
  }
  if (feeders.length === 0) return;
  const closeOwn = server.close.bind(server);
  server.close = (callback?: (err?: Error) => void) => {
    let pending = feeders.length + 1;
    let first: Error | undefined;
    const closed = (err?: Error) => {
      first ??= err;
      if (--pending === 0) callback?.(first);
    };
    for (const feeder of feeders) feeder.close(closed);
    closeOwn(closed);
    return server;
  };
}

function listenOn(s: NetServer, options: ListenOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(options, () => {
      s.off('error', reject);
      resolve();
    });
  });
}

/** Rejects with the bind's error (EADDRINUSE) when something listens on `port` already. */
async function probeFree(port: number, host: string): Promise<void> {
  const probe = createNetServer();
  await listenOn(probe, { port, host, exclusive: true });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
