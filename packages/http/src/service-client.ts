import { SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { AppError, type ErrorMetadata, type ErrorType, errorStatus } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';
import { type Dispatcher, Pool } from 'undici';
import type { z } from 'zod';
import { currentRequestId, REQUEST_ID_HEADER, REQUEST_ID_LOG_FIELD } from './request-context';

/**
 * The one way a Tollgate service calls another's HTTP API: an undici keep-alive pool per target, a
 * cached short-lived service token, a deadline per call, the current request id passed on as
 * `x-request-id`, and one error mapping:
 *
 * - the owner's 4xx envelope becomes the same AppError (type, message, metadata, status): the owner
 *   wrote that message for the caller;
 * - anything else (connection refused, deadline, 5xx, a body that does not match the contract) is
 *   logged with its detail and thrown as a 503 whose message names only the service.
 */
export interface ServiceClientOptions {
  /** The callee, as named in messages and logs (`keys`, `billing`, …). */
  service: string;
  /** Base URL of the callee, e.g. http://127.0.0.1:8081 */
  url: string;
  /** The service token for this callee (cache it: see `serviceTokenSource` in @tollgate/auth). */
  token: () => string | Promise<string>;
  /** Deadline of one call, headers and body (default 3 s). */
  timeoutMs?: number;
  /** Keep-alive connections to the callee (default 16). */
  connections?: number;
  /** Where internal failure details go (never to the public caller). */
  logger?: Logger;
  /**
   * What the owner's 4xx becomes: `relay` (default) the same AppError, for calls made on behalf of a
   * caller who may see the owner's message (dashboard, CLI); `unavailable` a 503 like any failure,
   * for calls the public caller did not shape (a 4xx there is this service's bug, not the caller's).
   */
  ownerErrors?: 'relay' | 'unavailable';
  /** The 503 message (default: "The <service> service is unavailable, try again shortly"). */
  unavailableMessage?: string;
  /**
   * Largest answer body read (default 8 MiB): a bigger one is cut off and the call is a 503, so an
   * owner's runaway answer cannot take the caller's memory with it.
   */
  maxResponseBytes?: number;
}

const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** The body as text, refusing more than `max` bytes (read chunk by chunk, never the whole of it). */
async function boundedText(body: AsyncIterable<Buffer>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) throw new Error(`answer larger than ${max} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface CallOptions<S extends z.ZodType> {
  method: HttpMethod;
  path: string;
  /** JSON body (sent as-is; build it with the contract's request schema). */
  body?: unknown;
  /** The contract's response schema: the answer is parsed with it (a mismatch is a 503). */
  response: S;
  /** 404 answers null instead of throwing. */
  nullOn404?: boolean;
  /** Overrides the client's deadline for this call. */
  timeoutMs?: number;
  /** Extra headers (e.g. the acting user and client address of a dashboard call). */
  headers?: Record<string, string>;
}

export interface StreamOptions {
  method: string;
  path: string;
  /** Extra headers; a `x-service-token` here replaces the client's token (e.g. a caller-identity token). */
  headers?: Record<string, string>;
  body?: Dispatcher.DispatchOptions['body'];
}

export interface ServiceClient {
  readonly service: string;
  /** One JSON call; the answer parsed with the contract's schema. */
  call<S extends z.ZodType>(options: CallOptions<S>): Promise<z.output<S>>;
  call<S extends z.ZodType>(options: CallOptions<S> & { nullOn404: true }): Promise<z.output<S> | null>;
  /**
   * A raw call for relaying (the proxy's forwarder): status, headers and body stream as the owner sent
   * them. Only connection failures and the headers deadline are mapped (to 503).
   */
  stream(options: StreamOptions): Promise<Dispatcher.ResponseData>;
  close(): Promise<void>;
}

interface Envelope {
  error?: { message?: unknown; metadata?: { error_type?: unknown } & Record<string, unknown> };
}

const isErrorType = (t: unknown): t is ErrorType => typeof t === 'string' && t in errorStatus;

/** The owner's 4xx as the same AppError, or null when the answer is not a well-formed 4xx envelope. */
function ownerError(status: number, body: unknown): AppError | null {
  if (status < 400 || status >= 500) return null;
  const error = (body as Envelope | null)?.error;
  const type = error?.metadata?.error_type;
  if (!error || !isErrorType(type) || typeof error.message !== 'string') return null;
  const { error_type: _t, ...rest } = error.metadata ?? {};
  const metadata: ErrorMetadata = {};
  for (const [k, v] of Object.entries(rest)) {
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) metadata[k] = v as string;
  }
  return new AppError(type, error.message, metadata, status);
}

export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  const timeoutMs = options.timeoutMs ?? 3000;
  const pool = new Pool(options.url, {
    connections: options.connections ?? 16,
    keepAliveTimeout: 30_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connectTimeout: timeoutMs,
  });
  const unavailableMessage =
    options.unavailableMessage ?? `The ${options.service} service is unavailable, try again shortly`;

  const unavailable = (detail: Record<string, unknown>): AppError => {
    const requestId = currentRequestId();
    options.logger?.warn(
      { callee: options.service, ...detail, ...(requestId ? { [REQUEST_ID_LOG_FIELD]: requestId } : {}) },
      'internal call failed',
    );
    return new AppError('service_unavailable', unavailableMessage, { service: options.service });
  };

  const headersFor = async (extra?: Record<string, string>): Promise<Record<string, string>> => {
    // A caller-identity token in `extra` replaces the client's own (no signature for it then).
    const token = extra?.[SERVICE_TOKEN_HEADER] ?? (await options.token());
    const headers: Record<string, string> = { ...extra, [SERVICE_TOKEN_HEADER]: token };
    const requestId = currentRequestId();
    if (requestId) headers[REQUEST_ID_HEADER] = requestId;
    return headers;
  };

  async function call<S extends z.ZodType>(o: CallOptions<S>): Promise<z.output<S> | null> {
    const headers = await headersFor({ ...o.headers, accept: 'application/json' });
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const deadline = o.timeoutMs ?? timeoutMs;
    let status: number;
    let body: unknown;
    try {
      const res = await pool.request({
        method: o.method,
        path: o.path,
        headers,
        body: o.body === undefined ? undefined : JSON.stringify(o.body),
        signal: AbortSignal.timeout(deadline),
      });
      status = res.statusCode;
      let text: string;
      try {
        text = await boundedText(res.body, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
      } catch (err) {
        res.body.destroy();
        throw err;
      }
      body = text.length > 0 ? JSON.parse(text) : null;
    } catch (err) {
      throw unavailable({ method: o.method, path: o.path, err: String((err as Error)?.message ?? err) });
    }
    if (status === 404 && o.nullOn404) return null;
    if (status < 200 || status >= 300) {
      const owned = options.ownerErrors === 'unavailable' ? null : ownerError(status, body);
      if (owned) throw owned;
      throw unavailable({ method: o.method, path: o.path, status, body });
    }
    const parsed = o.response.safeParse(body);
    if (!parsed.success) {
      throw unavailable({
        method: o.method,
        path: o.path,
        status,
        contract: parsed.error.issues.slice(0, 3),
      });
    }
    return parsed.data;
  }

  return {
    service: options.service,
    call: call as ServiceClient['call'],
    async stream(o) {
      try {
        return await pool.request({
          method: o.method as HttpMethod,
          path: o.path,
          headers: await headersFor(o.headers),
          body: o.body,
        });
      } catch (err) {
        throw unavailable({ method: o.method, path: o.path, err: String((err as Error)?.message ?? err) });
      }
    },
    close: () => pool.close(),
  };
}
