import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
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
 * and the listen backlog (SERVER_LISTEN_BACKLOG: a burst of connections queues instead of being dropped).
 */
export async function listenWithLimits(
  parts: Pick<ProxyAppParts, 'app' | 'doors'>,
  config: ProxyConfig,
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
  capConnections(server, budget, logger);
  logger.debug({ ...budget, openFiles }, 'connection cap');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A cluster worker listens on its own socket of the port (SO_REUSEPORT: the kernel spreads new
    // connections across the workers' sockets), so the primary accepts and hands over none (issue 30).
    const own = cluster.isWorker ? { exclusive: true, reusePort: true } : {};
    server.listen(
      { port: config.PORT, host: config.HOST, backlog: config.SERVER_LISTEN_BACKLOG, ...own },
      () => {
        server.off('error', reject);
        resolve();
      },
    );
  });
  return server;
}
