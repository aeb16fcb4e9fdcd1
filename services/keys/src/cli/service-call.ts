import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { createServiceClient, type HttpMethod } from '@tollgate/http';
import type { z } from 'zod';

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

type ServiceName = 'billing' | 'dashboard';

/** The service `name` as the CLI reaches it: its address and the admin identity's signer. */
export const serviceTarget = (
  ctx: { urls: ServiceUrls; admin: () => ServiceSigner },
  name: ServiceName,
): { name: ServiceName; url: string; signer: ServiceSigner } => ({
  name,
  url: ctx.urls[name],
  signer: ctx.admin(),
});

/**
 * One call to another service's internal API through the shared service client, with a CLI service
 * token. The owner's 4xx comes back as the same AppError; an unreachable or failing service is a 503
 * naming the address (and the variable to set). The answer is parsed with the contract's response schema.
 */
export async function callService<S extends z.ZodType>(
  target: { name: ServiceName; url: string; signer: ServiceSigner },
  method: HttpMethod,
  path: string,
  body: unknown,
  response: S,
): Promise<z.output<S>> {
  const variable = target.name === 'billing' ? 'BILLING_URL' : 'DASHBOARD_URL';
  const client = createServiceClient({
    service: target.name,
    url: target.url,
    token: serviceTokenSource(target.signer, target.name),
    timeoutMs: 10_000,
    connections: 1,
    unavailableMessage: `${target.name} at ${target.url} did not answer (or failed); is the stack running? Set ${variable} to reach another address`,
  });
  try {
    return await client.call({ method, path, body, response });
  } finally {
    await client.close();
  }
}
