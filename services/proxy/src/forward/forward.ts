import { pipeline } from 'node:stream/promises';
import { keyTokenSource, SERVICE_TOKEN_HEADER, type ServiceSigner } from '@tollgate/auth';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { Request, RequestHandler, Response } from 'express';
import { authenticatedKey } from '../auth/authenticate';

/**
 * Forwards an account call (`/keys…`, `/key`, `/credits`, `/generation`) to the owning service with a
 * short-lived token (signed by the proxy, for that service only) carrying the caller's identity. Request body and response body are streamed
 * (never parsed here); the mount prefix is stripped, the query string kept, status and body relayed.
 */
export interface Forwarder {
  handler(): RequestHandler;
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

  async function forward(req: Request, res: Response): Promise<void> {
    const key = authenticatedKey(res);
    const token = tokenFor({ kind: 'key', keyId: key.id, accountId: key.accountId, scope: key.scope });
    const headers: Record<string, string> = { [SERVICE_TOKEN_HEADER]: token, accept: 'application/json' };
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    if (hasBody) {
      const type = req.headers['content-type'];
      if (type) headers['content-type'] = type;
      const length = req.headers['content-length'];
      if (length) headers['content-length'] = length;
    }
    // req.url is relative to the mount point (`/api/v1` or `/v1` stripped) and keeps the query string.
    const upstream = await owner.stream({
      method: req.method,
      path: req.url,
      headers,
      body: hasBody && (headers['content-length'] || req.headers['transfer-encoding']) ? req : undefined,
    });
    res.status(upstream.statusCode);
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

  return {
    handler() {
      return (req, res, next) => {
        forward(req, res).catch(next);
      };
    },
    close: () => owner.close(),
  };
}
