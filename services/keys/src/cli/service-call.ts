import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import { AppError, type ErrorType, errorStatus } from '@tollgate/errors';

/** Where `make dev` runs the services the CLI calls: the defaults when the variables are unset. */
export const DEV_URLS = { billing: 'http://127.0.0.1:8082', dashboard: 'http://127.0.0.1:8083' } as const;

export interface ServiceUrls {
  billing: string;
  dashboard: string;
}

const clean = (v: string | undefined) => (v?.trim() ? v.trim().replace(/\/+$/, '') : undefined);

/** BILLING_URL / DASHBOARD_URL, or the `make dev` addresses. */
export const serviceUrls = (env: NodeJS.ProcessEnv): ServiceUrls => ({
  billing: clean(env.BILLING_URL) ?? DEV_URLS.billing,
  dashboard: clean(env.DASHBOARD_URL) ?? DEV_URLS.dashboard,
});

/**
 * One call to another service's internal API with a CLI service token. The owner's 4xx comes back
 * as the same AppError; an unreachable service is a 503 naming the address (and the variable to set).
 */
export async function callService(
  target: { name: 'billing' | 'dashboard'; url: string; secret: string },
  method: string,
  path: string,
  body: unknown,
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        [SERVICE_TOKEN_HEADER]: signServiceToken({ kind: 'service', service: 'cli' }, target.secret),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    const variable = target.name === 'billing' ? 'BILLING_URL' : 'DASHBOARD_URL';
    throw new AppError(
      'service_unavailable',
      `${target.name} at ${target.url} did not answer (${(err as Error).message}); is the stack running? Set ${variable} to reach another address`,
    );
  }
  const json = (await res.json().catch(() => null)) as {
    data?: unknown;
    error?: { message?: string; metadata?: { error_type?: string } };
  } | null;
  if (!res.ok) {
    const type = json?.error?.metadata?.error_type;
    const known = type && type in errorStatus ? (type as ErrorType) : 'internal';
    throw new AppError(known, json?.error?.message ?? `${target.name} answered HTTP ${res.status}`);
  }
  return json?.data;
}
