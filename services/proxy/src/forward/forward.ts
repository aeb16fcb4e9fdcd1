import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { keyTokenSource, SERVICE_TOKEN_HEADER, type ServiceSigner } from '@tollgate/auth';
import { CLIENT_ADDRESS_HEADER, type ClientAddress, createServiceClient } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { Request, RequestHandler, Response } from 'express';
import type { Dispatcher } from 'undici';
import { authenticatedKey } from '../auth/authenticate';
import type { ProxyRequest, ProxyResponse } from '../http/types';

/**
 * Forwards an account call (`/keys…`, `/key`, `/credits`, `/generation`) to the owning service with a
 * short-lived token (signed by the proxy, for that service only) carrying the caller's identity. Request body and response body are streamed
 * (never parsed here); the mount prefix is stripped, the query string kept, status and body relayed.
 */
export interface Forwarder {
  /** Forwards for the key authentication left in `res.locals`, and relays the answer. */
  handler(): RequestHandler;
  /** Sends `req` to the owner as `key`'s call; resolves with the owner's answer (status, headers, body stream). */
  send(req: ProxyRequest, key: CachedKey): Promise<Dispatcher.ResponseData>;
  /** Relays an answer of `send` to the client. */
  relay(res: ProxyResponse, upstream: Dispatcher.ResponseData): Promise<void>;
  close(): Promise<void>;
}

const RELAYED_RESPONSE_HEADERS = ['content-type', 'content-length', 'location', 'retry-after'] as const;

export function createForwarder(options: {
  /** The owning service, as named in the 503 (`keys`, `billing`). */
  service: 'keys' | 'billing';
  url: string;
  /** The proxy's identity: the token names the caller's key, for `service` only. */
  signer: ServiceSigner;
  timeoutMs: number;
  logger?: Logger;
  /** The client's address (TRUSTED_PROXIES), handed to the owner for its audit log; default the TCP peer. */
  clientAddress?: ClientAddress;
}): Forwarder {
  // The shared service client: its pool, deadline, request id and 503 mapping; the token is the caller's.
  const owner = createServiceClient({
    service: options.service,
    url: options.url,
    token: () => '',
    timeoutMs: options.timeoutMs,
    connections: 32,
    logger: options.logger,
  });

  // One token per key, re-signed every 30 s (not one signature per call, nor one verification in the
  // owner, which caches verified tokens by their string): it names the key, for this owner only.
  const tokenFor = keyTokenSource(options.signer, options.service);
  const clientOf = options.clientAddress ?? ((req: ProxyRequest) => req.socket.remoteAddress ?? 'unknown');

  async function send(req: ProxyRequest, key: CachedKey): Promise<Dispatcher.ResponseData> {
    const token = tokenFor({ kind: 'key', keyId: key.id, accountId: key.accountId, scope: key.scope });
    const headers: Record<string, string> = {
      accept: 'application/json',
      [CLIENT_ADDRESS_HEADER]: clientOf(req),
    };
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    if (hasBody) {
      const type = req.headers['content-type'];
      if (type) headers['content-type'] = type;
      const length = req.headers['content-length'];
      if (length) headers['content-length'] = length;
    }
    // The client's body goes through a pass-through, never as `req` itself: when the owner answers
    // before taking the whole body (a 404 for an unknown route, a refusal), undici stops sending it and
    // destroys the body stream, detaching an IncomingMessage from its socket first — the rest of the
    // body was then never read, so the client's next request on that keep-alive connection was never
    // answered and the connection ended in a reset at the keep-alive timeout (found by the fuzz run,
    // tests/fuzz/unread-body.test.ts). What the owner did not take is drained after the answer
    // (`drainUnread`), as Node drains a body no handler read.
    let body: PassThrough | undefined;
    if (hasBody && (headers['content-length'] || req.headers['transfer-encoding'])) {
      body = new PassThrough();
      req.pipe(body);
    }
    headers[SERVICE_TOKEN_HEADER] = await token;
    // req.url is relative to the mount point (`/api/v1` or `/v1` stripped) and keeps the query string.
    return owner.stream({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body });
  }

  /** Reads and drops what is left of a body the owner did not take, so the connection stays usable. */
  function drainUnread(req: ProxyRequest): void {
    if (req.complete || req.destroyed) return;
    req.unpipe();
    req.resume();
  }

  async function relay(res: ProxyResponse, upstream: Dispatcher.ResponseData): Promise<void> {
    res.statusCode = upstream.statusCode;
    for (const name of RELAYED_RESPONSE_HEADERS) {
      const value = upstream.headers[name];
      if (value !== undefined) res.setHeader(name, value);
    }
    try {
      await pipeline(upstream.body, res);
    } catch {
      // Client went away or the owner broke off mid-body: nothing more can be said to this client.
      upstream.body.destroy();
      res.destroy();
    }
  }

  async function forward(req: Request, res: Response): Promise<void> {
    try {
      await relay(res, await send(req, authenticatedKey(res)));
    } finally {
      drainUnread(req);
    }
  }

  return {
    handler() {
      return (req, res, next) => {
        forward(req, res).catch(next);
      };
    },
    send,
    relay,
    close: () => owner.close(),
  };
}
