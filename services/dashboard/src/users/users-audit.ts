import type { AuditQueryInput } from '@tollgate/contracts';
import { type AuditActor, appendAuditEntry, listAuditLog } from '@tollgate/db';
import type { Kysely } from 'kysely';
import type { Database } from '../database';

/** The signed-in user making a change, and the client's address (TRUSTED_PROXIES). */
export interface UserActor {
  userId: string;
  address: string;
}

/** A management key acting through the management API (the keys service names it: `/teams/{id}/members`). */
export interface ManagementKeyActor {
  managementKeyId: string;
  address: string | null;
}

const auditActor = (actor: UserActor | ManagementKeyActor | null): AuditActor =>
  actor === null
    ? { kind: 'admin_cli', id: null, address: null }
    : 'userId' in actor
      ? { kind: 'user', id: actor.userId, address: actor.address }
      : { kind: 'management_key', id: actor.managementKeyId, address: actor.address };

/** Appends one entry; call it inside the transaction of the change. `actor` null: the admin CLI. */
export function recordUserChange(
  trx: Kysely<Database>,
  actor: UserActor | ManagementKeyActor | null,
  change: { accountId: string; action: string; userId: string; before: object | null; after: object | null },
): Promise<void> {
  return appendAuditEntry(trx, 'dashboard', auditActor(actor), {
    accountId: change.accountId,
    action: change.action,
    target: { kind: 'user', id: change.userId },
    before: change.before,
    after: change.after,
  });
}

/** The account's entries matching the filters, newest first (`before`: entries with a smaller id). */
export const listUserChanges = (db: Kysely<Database>, accountId: string, q: AuditQueryInput) =>
  listAuditLog(db, 'dashboard', accountId, q);
