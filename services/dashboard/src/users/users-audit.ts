import type { AuditQueryInput } from '@tollgate/contracts';
import { appendAuditEntry, listAuditLog } from '@tollgate/db';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

/** The signed-in user making a change, and the client's address (TRUSTED_PROXIES). */
export interface UserActor {
  userId: string;
  address: string;
}

/** Appends one entry; call it inside the transaction of the change. `actor` null: the admin CLI. */
export function recordUserChange(
  trx: Kysely<Database>,
  actor: UserActor | null,
  change: { accountId: string; action: string; userId: string; before: object | null; after: object | null },
): Promise<void> {
  return appendAuditEntry(
    trx,
    'dashboard',
    actor
      ? { kind: 'user', id: actor.userId, address: actor.address }
      : { kind: 'admin_cli', id: null, address: null },
    {
      accountId: change.accountId,
      action: change.action,
      target: { kind: 'user', id: change.userId },
      before: change.before,
      after: change.after,
    },
  );
}

/** The account's entries matching the filters, newest first (`before`: entries with a smaller id). */
export const listUserChanges = (db: Kysely<Database>, accountId: string, q: AuditQueryInput) =>
  listAuditLog(db, 'dashboard', accountId, q);
