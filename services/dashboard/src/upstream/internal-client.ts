import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { createServiceClient, type HttpMethod } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { z } from 'zod';

/**
 * The dashboard's only way to keys and billing: their internal HTTP APIs through the shared service
 * client of `@tollgate/http` (undici keep-alive pool, a cached token signed with the dashboard's key
 * per callee, a deadline per call, the request id passed on). Every internal call the dashboard makes is
 * a method here.
 *
 * Errors: the owner's 4xx becomes the same AppError (its message names the field, safe to show);
 * anything else (5xx, timeout, connection refused, an answer without `data`) becomes 503 naming only
 * the service.
 */
export interface InternalClientOptions {
  keysUrl: string;
  billingUrl: string;
  /** The dashboard's identity. */
  signer: ServiceSigner;
  timeoutMs: number;
  logger?: Logger;
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

/** Every answer used here is `{"data": …}` (plus paging fields); the owners' contracts shape `data`. */
const enveloped = z.looseObject({ data: z.unknown() });

export function createInternalClient(o: InternalClientOptions): InternalClient & { close(): Promise<void> } {
  const clients = {
    keys: createServiceClient({
      service: 'keys',
      url: o.keysUrl,
      token: serviceTokenSource(o.signer, 'keys'),
      timeoutMs: o.timeoutMs,
      logger: o.logger,
    }),
    billing: createServiceClient({
      service: 'billing',
      url: o.billingUrl,
      token: serviceTokenSource(o.signer, 'billing'),
      timeoutMs: o.timeoutMs,
      logger: o.logger,
    }),
  };
  const call = (
    service: 'keys' | 'billing',
    method: HttpMethod,
    path: string,
    body?: unknown,
  ): Promise<Json> => clients[service].call({ method, path, body, response: enveloped });

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
    close: async () => {
      await Promise.all([clients.keys.close(), clients.billing.close()]);
    },
  };
}
