import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';

/**
 * The proxy's connection cap, sized from the process's open-files limit so that the excess of a
 * burst gets a clear 503 instead of a reset.
 *
 * Accepting past the descriptor limit fails with EMFILE, and Node (libuv) then accepts and closes
 * connections at once: the client sees a reset. Node's own `server.maxConnections` closes the
 * excess at accept too, with the client's request unread: again a reset. So the proxy serves up to
 * `serve` connections, accepts `headroom` more, and answers a request on one of those with 503
 * `service_unavailable`, `connection: close` and `retry-after: 1` (an over-cap connection that sends
 * nothing is closed after `OVER_CAP_IDLE_MS`, cleanly, with nothing unread). Only past
 * `serve + headroom` does it close at accept, which the descriptors kept aside make rare.
 */

/** Descriptors kept for all but client connections (listen socket, Redis, RabbitMQ, keys, spool, logs) and refusals. */
const MIN_RESERVE = 256;
/** How long an over-cap connection may stay without sending a request. */
const OVER_CAP_IDLE_MS = 500;
const OVER_CAP = Symbol('tollgate.overCap');

/** The soft limit of open files of this process (Linux: /proc/self/limits), or null when unknown. */
export function openFilesLimit(
  read: () => string = () => readFileSync('/proc/self/limits', 'utf8'),
): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(read());
    if (!m || m[1] === 'unlimited') return null;
    return Number(m[1]);
  } catch {
    return null;
  }
}

export interface ConnectionBudget {
  /** Connections served (0: no cap). */
  serve: number;
  /** Connections accepted past `serve` only to be answered 503 (0 with no cap). */
  headroom: number;
}

/**
 * A served connection holds one descriptor, and while it is answered one more to its provider; the
 * provider connections are at most `upstreamSockets` (UPSTREAM_CONNECTIONS per provider origin). So
 * with `openFiles` descriptors less a reserve (5 % of the limit, at least 256: Redis, RabbitMQ,
 * keys, billing, the spool, logs and the refused connections), n connections fit while
 * n + min(n, upstreamSockets) ≤ openFiles − reserve: (openFiles − reserve) / 2 when the provider
 * pool is that large, else openFiles − reserve − upstreamSockets. At most `configured`
 * (SERVER_MAX_CONNECTIONS; 0: no configured cap). Half the reserve is for connections answered 503.
 */
export function connectionBudget(
  configured: number,
  openFiles: number | null,
  upstreamSockets = 0,
): ConnectionBudget {
  if (openFiles === null) {
    return configured > 0 ? { serve: configured, headroom: MIN_RESERVE } : { serve: 0, headroom: 0 };
  }
  const reserve = Math.max(MIN_RESERVE, Math.floor(openFiles * 0.05));
  const usable = openFiles - reserve;
  const byFiles = Math.max(
    1,
    upstreamSockets >= usable / 2 ? Math.floor(usable / 2) : usable - upstreamSockets,
  );
  const serve = configured > 0 ? Math.min(configured, byFiles) : byFiles;
  return { serve, headroom: Math.max(1, Math.floor(reserve / 2)) };
}

export interface ConnectionCap {
  budget: ConnectionBudget;
  /** Connections open now. */
  open(): number;
  /** Answers 503 when this request's connection came in over the cap; true when it did. */
  refused(req: IncomingMessage, res: ServerResponse): boolean;
}

type CappedSocket = Socket & { [OVER_CAP]?: true };

/** Counts the server's connections and marks those accepted over `budget.serve`. */
export function capConnections(server: Server, budget: ConnectionBudget, logger?: Logger): ConnectionCap {
  let open = 0;
  let lastWarned = 0;
  if (budget.serve > 0) server.maxConnections = budget.serve + budget.headroom;
  server.on('connection', (socket: CappedSocket) => {
    open++;
    socket.once('close', () => {
      open--;
    });
    if (budget.serve === 0 || open <= budget.serve) return;
    socket[OVER_CAP] = true;
    const idle = setTimeout(() => {
      if (socket.bytesRead === 0) socket.end();
    }, OVER_CAP_IDLE_MS);
    idle.unref();
    socket.once('close', () => clearTimeout(idle));
    const now = Date.now();
    if (now - lastWarned > 10_000) {
      lastWarned = now;
      logger?.warn({ open, serve: budget.serve }, 'connection cap reached: new connections are answered 503');
    }
  });
  const error = new AppError(
    'service_unavailable',
    `This gateway process is at its connection limit (${budget.serve} open connections); retry shortly`,
  );
  const body = JSON.stringify(error.toEnvelope());
  return {
    budget,
    open: () => open,
    refused(req, res) {
      if ((req.socket as CappedSocket)[OVER_CAP] !== true) return false;
      res.shouldKeepAlive = false;
      res.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'retry-after': '1',
        connection: 'close',
      });
      res.end(body);
      return true;
    },
  };
}
