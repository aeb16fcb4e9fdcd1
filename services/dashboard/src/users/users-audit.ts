import type { AuditQueryInput } from '@tollgate/contracts';
import { listAuditLog } from '@tollgate/db';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

/** The signed-in user making a change, and the client's address (TRUSTED_PROXIES). */
export interface UserActor {
  userId: string;
  address: string;
}

/** Appends one entry; call it inside the transaction of the change. `actor` null: the admin CLI. */
export async function recordUserChange(
  trx: Kysely<Database>,
  actor: UserActor | null,
  change: { accountId: string; action: string; userId: string; before: object | null; after: object | null },
): Promise<void> {
  await trx
    .insertInto('dashboard.audit_log')
    .values({
      account_id: change.accountId,
      actor_kind: actor ? 'user' : 'admin_cli',
      actor_id: actor?.userId ?? null,
      client_address: actor?.address ?? null,
      action: change.action,
      target_kind: 'user',
      target_id: change.userId,
      before: change.before ? JSON.stringify(change.before) : null,
      after: change.after ? JSON.stringify(change.after) : null,
    })
    .execute();
}

/** The account's entries matching the filters, newest first (`before`: entries with a smaller id). */
export const listUserChanges = (db: Kysely<Database>, accountId: string, q: AuditQueryInput) =>
  listAuditLog(db, 'dashboard', accountId, q);
