/**
 * The SPA's only way to the server: same-origin JSON calls with the session cookie, and the session's
 * CSRF token on every state-changing request (read from GET /api/me).
 */
import type { DashboardData } from '@tollgate/contracts';

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

/**
 * The answers' types come from the dashboard's contract (`dashboardApi` in @tollgate/contracts), as
 * types only: nothing of zod or the server reaches the bundle.
 */
export type Me = DashboardData<'me'>;
export type Key = DashboardData<'keys'>[number];
export type UsageRow = DashboardData<'usage'>['rows'][number];
export type Generation = DashboardData<'generations'>[number];
