import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { accountWebhooks, queryString } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { type Acting, actingHeaders } from './internal-client';

/**
 * The dashboard's calls to billing's alert webhooks (`/internal/accounts/{id}/webhooks…`, contracts in
 * `@tollgate/contracts` webhooks.ts): the Alerts page. Billing validates bodies (its 400 names the
 * field) and checks URLs; the account always comes from the session.
 */
export function createWebhooksClient(o: {
  billingUrl: string;
  signer: ServiceSigner;
  timeoutMs: number;
  logger?: Logger;
}) {
  const billing = createServiceClient({
    service: 'billing',
    url: o.billingUrl,
    token: serviceTokenSource(o.signer, 'billing'),
    timeoutMs: o.timeoutMs,
    logger: o.logger,
  });
  const w = accountWebhooks;
  return {
    list: async (accountId: string) =>
      (await billing.call({ method: 'GET', path: w.list.path(accountId), response: w.list.response })).data,
    // Changes name the acting user and their address (billing's audit log).
    create: async (accountId: string, body: unknown, acting: Acting) =>
      (
        await billing.call({
          method: 'POST',
          path: w.create.path(accountId),
          headers: actingHeaders(acting),
          body,
          response: w.create.response,
        })
      ).data,
    update: async (accountId: string, id: string, body: unknown, acting: Acting) =>
      (
        await billing.call({
          method: 'PATCH',
          path: w.one.path(accountId, id),
          headers: actingHeaders(acting),
          body,
          response: w.one.response,
        })
      ).data,
    remove: async (accountId: string, id: string, acting: Acting) => {
      await billing.call({
        method: 'DELETE',
        path: w.remove.path(accountId, id),
        headers: actingHeaders(acting),
        response: w.remove.response,
      });
    },
    /** The send-test button: billing sends a `webhook.test` message now; its logged attempt. */
    test: async (accountId: string, id: string) =>
      (await billing.call({ method: 'POST', path: w.test.path(accountId, id), response: w.test.response }))
        .data,
    deliveries: async (accountId: string, id: string, limit?: string) =>
      (
        await billing.call({
          method: 'GET',
          path: `${w.attempts.path(accountId, id)}${queryString({ limit })}`,
          response: w.attempts.response,
        })
      ).data,
    close: () => billing.close(),
  };
}

export type WebhooksClient = ReturnType<typeof createWebhooksClient>;
