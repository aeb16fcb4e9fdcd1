import type { ColumnType, Kysely } from 'kysely';
import type { Database } from '../database';

/** dashboard.audit_log: append-only (a trigger refuses UPDATE, DELETE and TRUNCATE). Same shape as keys'. */
export interface DashboardAuditTable {
  id: ColumnType<string, never, never>;
  at: ColumnType<Date, never, never>;
  account_id: string;
  actor_kind: 'management_key' | 'user' | 'admin_cli';
  actor_id: string | null;
  client_address: string | null;
  action: string;
  target_kind: string;
  target_id: string;
  before: ColumnType<unknown, string | null, never> | null;
  after: ColumnType<unknown, string | null, never> | null;
}

/** The signed-in user making a change, and the client's address (TRUSTED_PROXIES). */
export interface UserActor {
  userId: string;
  address: string;
}

/** Appends one entry; call it inside the transaction of the change. */
export async function recordUserChange(
  trx: Kysely<Database>,
  actor: UserActor,
  change: { accountId: string; action: string; userId: string; before: object | null; after: object | null },
): Promise<void> {
  await trx
    .insertInto('dashboard.audit_log')
    .values({
      account_id: change.accountId,
      actor_kind: 'user',
      actor_id: actor.userId,
      client_address: actor.address,
      action: change.action,
      target_kind: 'user',
      target_id: change.userId,
      before: change.before ? JSON.stringify(change.before) : null,
      after: change.after ? JSON.stringify(change.after) : null,
    })
    .execute();
}

/** The account's entries, newest first (`before`: entries with a smaller id). */
export async function listUserChanges(
  db: Kysely<Database>,
  accountId: string,
  q: { before?: string; limit: number },
) {
  let query = db.selectFrom('dashboard.audit_log').selectAll().where('account_id', '=', accountId);
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
