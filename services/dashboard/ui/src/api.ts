/**
 * The SPA's only way to the server: same-origin JSON calls with the session cookie, and the session's
 * CSRF token on every state-changing request (read from GET /api/me).
 */
import type { LimitReset } from '@tollgate/money';

let csrfToken: string | null = null;

export const setCsrfToken = (token: string | null) => {
  csrfToken = token;
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (res.status === 204) return undefined as T;
  const json = (await res.json().catch(() => null)) as {
    error?: { message?: string; metadata?: { error_type?: string } };
  } | null;
  if (!res.ok) {
    throw new ApiError(
      res.status,
      json?.error?.metadata?.error_type ?? 'error',
      json?.error?.message ?? statusMessage(res.status, res.statusText),
    );
  }
  return json as T;
}

/** An answer without the API's error envelope (a proxy or load balancer in between answered). */
function statusMessage(status: number, text: string): string {
  const what = `HTTP ${status}${text ? ` ${text}` : ''}`;
  if (status === 502 || status === 503 || status === 504)
    return `The dashboard server did not answer (${what}): it may be restarting or unreachable. Retrying…`;
  if (status === 401) return `Your session has ended (${what}): sign in again.`;
  return `The request failed (${what}).`;
}

export const get = <T>(path: string) => api<T>('GET', path);

export interface Me {
  user: { id: string; email: string; display_name: string; role: 'owner' | 'viewer' | 'member' };
  account: { id: string; slug: string; name: string };
  csrf_token: string;
  session_expires_at: string;
}

export interface Key {
  hash: string;
  name: string;
  label: string;
  scope: 'inference' | 'management';
  limit: number | null;
  limit_reset: LimitReset | null;
  disabled: boolean;
  revoked: boolean;
  last_used_at: string | null;
  created_at: string;
  usage: number;
  limit_remaining: number | null;
  expires_at: string | null;
  allowed_models: string[];
  rate_limit_rpm: number | null;
  include_byok_in_limit: boolean;
}

export interface UsageRow {
  bucket: string | null;
  group: string | null;
  requests: number;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  cost: string;
}

export interface Generation {
  id: string;
  model: string;
  provider_name: string;
  upstream_model: string;
  upstream_id: string | null;
  key_id: string;
  app: string | null;
  created_at: string;
  finished_at: string;
  streamed: boolean;
  cancelled: boolean;
  finish_reason: string | null;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  cost: string;
  usage_source: 'provider' | 'estimated';
  latency_ms: number;
  generation_time_ms: number;
  /** The time the gateway itself added (ms, to the µs); null on records of older proxies. */
  gateway_overhead_ms: number | null;
  tokens_per_second: number | null;
  is_byok: boolean;
  error: { code: number; message: string } | null;
}
