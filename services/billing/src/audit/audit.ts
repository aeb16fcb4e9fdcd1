import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams, auditQuery } from '@tollgate/contracts';
import { type AuditActorKind, listAuditLog } from '@tollgate/db';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

type Db = Kysely<Database>;

/** Who made a change: a management key (through the proxy), a dashboard user, or the admin CLI. */
export interface AuditActor {
  kind: AuditActorKind;
  /** The management key's id or the dashboard user's id; null for the admin CLI. */
  id: string | null;
  /** The client's address as the edge resolved it; null for the admin CLI. */
  address: string | null;
}

/** Appends one entry; call it in the transaction of the change. */
export async function recordChange(
  trx: Db,
  actor: AuditActor,
  change: {
    accountId: string;
    action: string;
    target: { kind: string; id: string };
    before: object | null;
    after: object | null;
  },
): Promise<void> {
  await trx
    .insertInto('billing.audit_log')
    .values({
      account_id: change.accountId,
      actor_kind: actor.kind,
      actor_id: actor.id,
      client_address: actor.address,
      action: change.action,
      target_kind: change.target.kind,
      target_id: change.target.id,
      before: change.before ? JSON.stringify(change.before) : null,
      after: change.after ? JSON.stringify(change.after) : null,
    })
    .execute();
}

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
