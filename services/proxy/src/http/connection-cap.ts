import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import { AppError } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';

/**
 * The proxy's connection cap, sized from the process's open-files limit so that every connection of
 * a burst it cannot serve gets a whole 503 instead of a reset (issue 30).
 *
 * The process serves up to `serve` connections; a connection accepted past that is answered at once,
 * without the HTTP parser, with a pre-built 503 `service_unavailable` (the error envelope,
 * `retry-after: 1`, `connection: close`), then read and discarded until its client closes
 * (`refuser`). Node's own `server.maxConnections` is not used: it closes the excess at accept, with
 * no answer (the client sees a reset or "socket hang up"). What must never happen is running out of
 * descriptors: at EMFILE libuv accepts and closes every queued connection at once (resets). So the
 * refusals held at once are capped too (`headroom`, inside the descriptor reserve). Node 24's libuv
 * (1.52) accepts one connection per listening socket per event-loop wake-up (strace: 500 queued
 * connections, 500 accept4 calls each after its own epoll_pwait; SERVER_ACCEPT_SOCKETS sockets,
 * http/server.ts, take up to that many per wake-up), so a burst is taken in turn with the closes of
 * the refusals before it, and what is not yet accepted waits in the kernel's queue
 * (SERVER_LISTEN_BACKLOG).
 */

/** Descriptors kept for all but client connections (listen socket, Redis, RabbitMQ, keys, spool, logs) and refusals. */
const MIN_RESERVE = 256;
/** How long a refused client gets to close its side after the 503 (its bytes read meanwhile). */
const REFUSAL_LINGER_MS = 5_000;

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
  /** Connections past `serve` held at once while they are answered 503 (0 with no cap). */
  headroom: number;
}

/**
 * A served connection holds one descriptor, and while it is answered one more to its provider; the
 * provider connections are at most `upstreamSockets` (UPSTREAM_CONNECTIONS per provider origin). So
 * with `openFiles` descriptors less a reserve (5 % of the limit, at least 256: Redis, RabbitMQ,
 * keys, billing, the spool, logs and the refused connections), n connections fit while
 * n + min(n, upstreamSockets) ≤ openFiles − reserve: (openFiles − reserve) / 2 when the provider
 * pool is that large, else openFiles − reserve − upstreamSockets. At most `configured`
 * (SERVER_MAX_CONNECTIONS; 0: no configured cap). Half the reserve is for connections answered 503
 * (`headroom`), the other half for the process's own descriptors (≈ 40 in a production process).
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
  /** Connections served now (those being answered 503 not counted). */
  open(): number;
  /** Connections being answered 503 now (each holds its descriptor until its client closes). */
  refusing(): number;
}

/** net.Server's own count of its open connections (what `maxConnections` is checked against). */
type CountedServer = NetServer & { _connections: number };

/**
 * Puts the cap in front of the HTTP server: a connection is handed to the HTTP parser (the http
 * server's own 'connection' listener) while at most `budget.serve` are served, else it is answered
 * 503 without the parser (`refuser`). The served path costs one comparison per connection:
 * net.Server counts its open connections anyway (`_connections`, up before 'connection', down when a
 * socket is destroyed), and a request on a served connection is not looked at.
 *
 * `feeders`: more listening sockets of the same port whose connections are handed to this server
 * (`server.emit('connection')`, http/server.ts): each counts its own, and the cap is on the sum.
 */
export function capConnections(
  server: Server,
  budget: ConnectionBudget,
  logger?: Logger,
  feeders: readonly NetServer[] = [],
): ConnectionCap {
  const counted = [server, ...feeders] as CountedServer[];
  const refusals = new Set<Socket>();
  if (counted.some((s) => typeof s._connections !== 'number'))
    throw new Error("capConnections: this runtime's net.Server does not count its connections");
  const open =
    counted.length === 1
      ? () => (counted[0] as CountedServer)._connections - refusals.size
      : () => {
          let n = -refusals.size;
          for (const s of counted) n += s._connections;
          return n;
        };
  if (budget.serve === 0) return { budget, open, refusing: () => 0 };
  const [http] = server.listeners('connection') as Array<(this: Server, socket: Socket) => void>;
  if (!http) throw new Error('capConnections: not an http.Server (no connection listener)');
  server.removeListener('connection', http);
  const refuse = refuser(refusals, Math.max(1, budget.headroom), budget.serve);
  let lastWarned = 0;
  server.on('connection', (socket: Socket) => {
    if (open() <= budget.serve) {
      http.call(server, socket);
      return;
    }
    refuse(socket);
    const now = Date.now();
    if (now - lastWarned > 10_000) {
      lastWarned = now;
      logger?.warn(
        { serve: budget.serve, refusing: refusals.size },
        'connection cap reached: new connections are answered 503',
      );
    }
  });
  return { budget, open, refusing: () => refusals.size };
}

/**
 * How a connection past the cap is answered, without the HTTP parser: the pre-built 503 is written
 * at once and the socket half-closed (FIN after the answer); it then keeps reading and discarding
 * until the client closes its side, or `REFUSAL_LINGER_MS`. A client that had not sent its request
 * yet sends it into a socket still open, and nothing it sent is left unread when the socket closes:
 * a socket closed with unread bytes sends RST, and RST reaching a client before it read the answer
 * may cost it the answer (RFC 9112 §9.6, "lingering close").
 *
 * Every refusal holds a descriptor until then, and running out of descriptors is what must never
 * happen: at EMFILE libuv accepts and closes every queued connection at once (resets). So at most
 * `most` refusals are held (the budget's headroom, inside the descriptor reserve); past that the
 * oldest, long answered, is closed.
 */
function refuser(refusals: Set<Socket>, most: number, serve: number): (socket: Socket) => void {
  const body = JSON.stringify(
    new AppError(
      'service_unavailable',
      `This gateway process is at its connection limit (${serve} open connections); retry shortly`,
    ).toEnvelope(),
  );
  const answer = Buffer.from(
    'HTTP/1.1 503 Service Unavailable\r\n' +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'retry-after: 1\r\n' +
      'connection: close\r\n\r\n' +
      body,
  );
  // A refusal leaves the set when its socket is destroyed: net.Server's count drops then too.
  const close = function (this: Socket) {
    refusals.delete(this);
    this.destroy();
  };
  return (socket: Socket) => {
    if (refusals.size >= most) close.call(refusals.values().next().value as Socket);
    refusals.add(socket);
    socket.end(answer);
    socket.resume(); // read and dropped
    socket.setTimeout(REFUSAL_LINGER_MS, close);
    socket.on('end', close); // the client closed its side: everything it sent has been read
    socket.on('error', close);
    socket.once('close', close);
  };
}
