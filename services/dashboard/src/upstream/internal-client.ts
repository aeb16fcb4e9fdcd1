import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import { AppError, type ErrorType, errorStatus } from '@tollgate/errors';

/**
 * The dashboard's only way to keys and billing: their internal HTTP APIs with a service token
 * (`{kind:'service', service:'dashboard'}`), a deadline per call and the request id passed on.
 * Every internal call the dashboard makes is a method here, so moving to the shared service
 * client (`@tollgate/http`, `packages/contracts`) is a change to this file only.
 *
 * Errors: a 4xx answer becomes the same AppError (its message names the field, safe to show);
 * anything else (5xx, timeout, connection refused) becomes 503 without the internal detail.
 */
export interface InternalClientOptions {
  keysUrl: string;
  billingUrl: string;
  secret: string;
  timeoutMs: number;
}

type Query = Record<string, string | number | boolean | undefined>;

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are shaped by the owning service's contract
type Json = any;

export interface InternalClient {
  account(accountId: string): Promise<{ id: string; slug: string; name: string }>;
  listKeys(accountId: string, includeRevoked: boolean): Promise<Json[]>;
  createKey(accountId: string, body: Json): Promise<Json>;
  updateKey(accountId: string, hash: string, body: Json): Promise<Json>;
  revokeKey(accountId: string, hash: string): Promise<Json>;
  usage(accountId: string, query: Query): Promise<Json>;
  generations(accountId: string, query: Query): Promise<{ data: Json[]; next_before: string | null }>;
  generation(accountId: string, id: string): Promise<Json>;
  credits(accountId: string, query: Query): Promise<Json>;
}

function qs(query: Query = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

export function createInternalClient(
  o: InternalClientOptions,
  requestId?: () => string | undefined,
): InternalClient {
  async function call(
    service: 'keys' | 'billing',
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Json> {
    const base = service === 'keys' ? o.keysUrl : o.billingUrl;
    const headers: Record<string, string> = {
      [SERVICE_TOKEN_HEADER]: signServiceToken({ kind: 'service', service: 'dashboard' }, o.secret),
      accept: 'application/json',
    };
    const rid = requestId?.();
    if (rid) headers['x-request-id'] = rid;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(o.timeoutMs),
      });
    } catch {
      throw new AppError('service_unavailable', `The ${service} service is unavailable, try again shortly`);
    }
    const json = (await res.json().catch(() => null)) as Json;
    if (res.ok) return json;
    const type = json?.error?.metadata?.error_type as string | undefined;
    if (res.status >= 400 && res.status < 500 && type && type in errorStatus) {
      const { error_type: _t, ...metadata } = json.error.metadata ?? {};
      throw new AppError(
        type as ErrorType,
        String(json.error.message ?? 'Request refused'),
        metadata,
        res.status,
      );
    }
    throw new AppError('service_unavailable', `The ${service} service is unavailable, try again shortly`);
  }

  const acct = (id: string) => `/internal/accounts/${encodeURIComponent(id)}`;
  return {
    account: async (id) => (await call('keys', 'GET', acct(id))).data,
    async listKeys(id, includeRevoked) {
      const all: Json[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const page: { data: Json[]; next_offset: number | null } = await call(
          'keys',
          'GET',
          `${acct(id)}/keys${qs({ include_revoked: includeRevoked, offset })}`,
        );
        all.push(...page.data);
        offset = page.next_offset;
      }
      return all;
    },
    createKey: async (id, body) => (await call('keys', 'POST', `${acct(id)}/keys`, body)).data,
    updateKey: async (id, hash, body) =>
      (await call('keys', 'PATCH', `${acct(id)}/keys/${encodeURIComponent(hash)}`, body)).data,
    revokeKey: async (id, hash) =>
      (await call('keys', 'DELETE', `${acct(id)}/keys/${encodeURIComponent(hash)}`)).data,
    usage: async (id, query) => (await call('billing', 'GET', `${acct(id)}/usage${qs(query)}`)).data,
    generations: (id, query) => call('billing', 'GET', `${acct(id)}/generations${qs(query)}`),
    generation: async (id, genId) =>
      (await call('billing', 'GET', `${acct(id)}/generations/${encodeURIComponent(genId)}`)).data,
    credits: async (id, query) => (await call('billing', 'GET', `${acct(id)}/credits${qs(query)}`)).data,
  };
}
