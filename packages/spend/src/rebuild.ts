import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { spendRebuild } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { spendUnavailable } from './refusals';

/**
 * Rebuilds an account's hash (and a key's, when `keyId` is given, and a team's, when `teamId` is)
 * from Postgres as of `at`.
 */
export type Rebuild = (
  accountId: string,
  keyId: string | null,
  at: Date,
  teamId?: string | null,
) => Promise<void>;

/**
 * Billing's `POST /internal/spend/rebuild`, called when a hash is missing or unbuilt. Whatever billing
 * answers other than success (the detail is logged by the client), the request cannot be checked: 503.
 */
export function billingRebuild(options: {
  billingUrl: string;
  signer: ServiceSigner;
  timeoutMs?: number;
  logger?: Logger;
}): Rebuild {
  const billing = createServiceClient({
    service: 'billing',
    url: options.billingUrl.replace(/\/+$/, ''),
    token: serviceTokenSource(options.signer, 'billing'),
    timeoutMs: options.timeoutMs ?? 5_000,
    logger: options.logger,
    ownerErrors: 'unavailable',
    unavailableMessage: 'Spend counters are unavailable, retry shortly',
  });
  return async (accountId, keyId, at, teamId) => {
    try {
      await billing.call({
        method: spendRebuild.method,
        path: spendRebuild.path,
        body: {
          account_id: accountId,
          key_id: keyId,
          at: at.toISOString(),
          ...(teamId ? { team_id: teamId } : {}),
        },
        response: spendRebuild.response,
      });
    } catch {
      throw spendUnavailable();
    }
  };
}

/** One rebuild at a time per (account, key, team) in this process; concurrent callers share it. */
export function sharedRebuild(rebuild: Rebuild): Rebuild {
  const inflight = new Map<string, Promise<void>>();
  return (accountId, keyId, at, teamId) => {
    const id = `${accountId}:${keyId ?? ''}:${teamId ?? ''}`;
    let p = inflight.get(id);
    if (!p) {
      p = rebuild(accountId, keyId, at, teamId).finally(() => inflight.delete(id));
      inflight.set(id, p);
    }
    return p;
  };
}
