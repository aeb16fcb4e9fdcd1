import { createServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { type AuditEntry, accountAudit, queryString } from '@tollgate/contracts';
import { createServiceClient, type ServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';

type Page = { data: AuditEntry[]; next_before: string | null };

/**
 * The audit logs the keys service does not own, for the merged `GET /audit`: billing's (credits,
 * postpaid) and the dashboard's (users, roles, teams, sessions, SSO), each read from its owner's
 * `GET /internal/accounts/{id}/audit` (contract `accountAudit`) with the keys service's token. An
 * owner that does not answer makes the whole page a 503 naming it (a timeline with a silent hole
 * would be a wrong audit); an owner whose URL is not configured has no entries (a deployment
 * without it).
 */
export interface RemoteAuditLogs {
  read(source: 'billing' | 'dashboard', accountId: string, filters: Record<string, string>): Promise<Page>;
  close(): Promise<void>;
}

const EMPTY: Page = { data: [], next_before: null };

export function createRemoteAuditLogs(options: {
  billingUrl?: string | undefined;
  dashboardUrl?: string | undefined;
  /** The keys service's identity (SERVICE_PRIVATE_KEY). */
  privateKey: string;
  timeoutMs?: number;
  logger?: Logger;
}): RemoteAuditLogs {
  const signer = createServiceSigner('keys', options.privateKey);
  const clientFor = (service: 'billing' | 'dashboard', url: string | undefined): ServiceClient | null =>
    url
      ? createServiceClient({
          service,
          url,
          token: serviceTokenSource(signer, service),
          timeoutMs: options.timeoutMs ?? 5000,
          logger: options.logger,
          // The filters were checked here first: the owner's 4xx would be this service's bug.
          ownerErrors: 'unavailable',
          unavailableMessage: `The audit log is unavailable (${service} did not answer); retry later`,
        })
      : null;
  const clients = {
    billing: clientFor('billing', options.billingUrl),
    dashboard: clientFor('dashboard', options.dashboardUrl),
  };
  return {
    async read(source, accountId, filters) {
      const client = clients[source];
      if (!client) return EMPTY;
      return client.call({
        method: accountAudit.method,
        path: `${accountAudit.path(accountId)}${queryString(filters)}`,
        response: accountAudit.response,
      });
    },
    async close() {
      await Promise.all(Object.values(clients).map((c) => c?.close()));
    },
  };
}
