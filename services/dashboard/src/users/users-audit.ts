import type { AuditQueryInput } from '@tollgate/contracts';
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
export async function listUserChanges(db: Kysely<Database>, accountId: string, q: AuditQueryInput) {
  let query = db.selectFrom('dashboard.audit_log').selectAll().where('account_id', '=', accountId);
  if (q.actor_kind) query = query.where('actor_kind', '=', q.actor_kind);
  if (q.actor_id) query = query.where('actor_id', '=', q.actor_id);
  if (q.action) query = query.where('action', '=', q.action);
  if (q.target_id) query = query.where('target_id', '=', q.target_id);
  if (q.since) query = query.where('at', '>=', new Date(q.since));
  if (q.until) query = query.where('at', '<', new Date(q.until));
  if (q.before) query = query.where('id', '<', q.before as never);
  const rows = await query.orderBy('id', 'desc').limit(q.limit).execute();
  return {
    data: rows.map((r) => ({
      id: r.id,
      at: r.at.toISOString(),
      actor: { kind: r.actor_kind, id: r.actor_id },
      client_address: r.client_address,
      action: r.action,
      target: { kind: r.target_kind, id: r.target_id },
      before: (r.before ?? null) as Record<string, unknown> | null,
      after: (r.after ?? null) as Record<string, unknown> | null,
    })),
    next_before: rows.length === q.limit ? (rows[rows.length - 1]?.id ?? null) : null,
  };
}
