import { type Server, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';

/**
 * What a connection-level failure Node's HTTP parser reports (`clientError`) is answered with: the
 * standard error envelope instead of Node's bare `HTTP/1.1 400 Bad Request`. Null: nothing to answer
 * (the peer reset or the socket failed; there is no request to reply to).
 */
export function clientErrorFor(code: string | undefined): AppError | null {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('payload_too_large', 'Request headers are too large', {}, 431);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('payload_too_large', 'Chunk extensions are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('timeout', 'The request was not received in time', {}, 408);
    default:
      if (code?.startsWith('HPE_')) return new AppError('bad_request', 'Malformed HTTP request');
      return null;
  }
}

/** How long a peer gets to take the error response before the socket is destroyed anyway. */
const CLOSE_GRACE_MS = 2_000;

type HttpSocket = Socket & { _httpMessage?: (NodeJS.EventEmitter & { writableFinished: boolean }) | null };

/**
 * Installs the `clientError` handler on a service's HTTP server: a parser error (headers too large,
 * malformed request line, bad framing) or the request deadline gets a complete HTTP response with the
 * JSON error envelope and `connection: close`, then the socket closes. A response still being written
 * on that connection (a pipelined request before the bad bytes) finishes first; if it is aborted
 * instead, or the socket is no longer writable, nothing is written (the peer would read a corrupted
 * stream) and the socket is destroyed. Other socket errors (ECONNRESET, …) just destroy it. The raw
 * packet is never logged (it may hold an API key).
 */
export function answerClientErrors(server: Server, logger?: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: HttpSocket) => {
    const error = clientErrorFor(err.code);
    if (!error) {
      socket.destroy();
      return;
    }
    logger?.debug({ code: err.code, status: error.status }, 'client error answered');
    const answer = () => {
      const inFlight = socket._httpMessage;
      if (inFlight && !inFlight.writableFinished) {
        inFlight.once('finish', () => setImmediate(answer));
        inFlight.once('close', () => {
          if (!inFlight.writableFinished) socket.destroy();
        });
        return;
      }
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const body = JSON.stringify(error.toEnvelope());
      socket.write(
        `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
          'content-type: application/json; charset=utf-8\r\n' +
          `content-length: ${Buffer.byteLength(body)}\r\n` +
          'connection: close\r\n\r\n' +
          body,
      );
      socket.destroySoon();
      setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
    };
    answer();
  });
}
