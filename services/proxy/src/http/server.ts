import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { answerClientErrors } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { ProxyConfig } from '../config';
import type { ProxyAppParts } from './app';

/**
 * The public server with its edge deadlines and connection cap (docs/operations.md "Security"):
 * headers and whole-request deadlines (checked every quarter of the headers deadline, ≥ 250 ms),
 * keep-alive idle time, socket inactivity while a request is open, at most SERVER_MAX_CONNECTIONS.
 */
export async function listenWithLimits(
  parts: Pick<ProxyAppParts, 'app' | 'doors'>,
  config: ProxyConfig,
  logger: Logger,
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
  if (config.SERVER_MAX_CONNECTIONS > 0) server.maxConnections = config.SERVER_MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
