import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams, auditQuery } from '@tollgate/contracts';
import { type AuditActor, type AuditChange, appendAuditEntry, listAuditLog } from '@tollgate/db';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

export type { AuditActor } from '@tollgate/db';

/** Appends one entry; call it inside the transaction that commits the change (@tollgate/db). */
export const recordChange = (trx: Db, actor: AuditActor, change: AuditChange): Promise<void> =>
  appendAuditEntry(trx, 'billing', actor, change);

/**
 * Credits and postpaid are changed only by the admin CLI (billing's CREDIT_WRITERS), so the actor is
 * the admin CLI and the target the account.
 */
export const recordAdminChange = (
  trx: Db,
  change: { accountId: string; action: string; before: object | null; after: object | null },
): Promise<void> =>
  recordChange(
    trx,
    { kind: 'admin_cli', id: null, address: null },
    { ...change, target: { kind: 'account', id: change.accountId } },
  );

/** The account's postpaid flag before a change (false when never set). */
export async function currentPostpaid(trx: Db, accountId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('billing.account_settings')
    .select('postpaid')
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.postpaid ?? false;
}

/** `GET /internal/accounts/:accountId/audit` (dashboard, and keys for the merged `GET /audit`): billing's entries, newest first, the filters of every audit log (`auditQuery`), paged with `before`. */
export function billingAuditRoutes(deps: { db: Db; verifier: ServiceVerifier }): Router {
  const router = Router();
  router.get(
    '/internal/accounts/:accountId/audit',
    serviceCaller(deps.verifier, ['dashboard', 'keys']),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      res.json(await listAuditLog(deps.db, 'billing', accountId, parseInput(auditQuery, req.query)));
    },
  );
  return router;
}
