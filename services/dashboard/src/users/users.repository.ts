import { sql } from 'kysely';
import type { DashboardDb, Role, User } from '../database';

/** One user of the account, locked for the rest of the transaction. */
export async function lockUser(
  db: DashboardDb,
  accountId: string,
  userId: string,
): Promise<User | undefined> {
  return db
    .selectFrom('dashboard.users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', userId)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * The owners of the account who can sign in (a password set, or linked to single sign-on), locked: two owners demoting each
 * other at once serialise here, so one of them stays.
 */
export async function lockActiveOwners(db: DashboardDb, accountId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('dashboard.users')
    .select('id')
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .where((eb) => eb.or([eb('password_hash', 'is not', null), eb('sso_subject', 'is not', null)]))
    .orderBy('id')
    .forUpdate()
    .execute();
  return rows.map((r) => r.id);
}

export async function setRole(db: DashboardDb, userId: string, role: Role, at: Date) {
  await db.updateTable('dashboard.users').set({ role, updated_at: at }).where('id', '=', userId).execute();
}

/** Deletes the user (sessions and invitations go with it: foreign keys cascade). */
export async function deleteUser(db: DashboardDb, userId: string) {
  await db.deleteFrom('dashboard.users').where('id', '=', userId).execute();
}

/** Ends every session of the user; returns how many there were. */
export async function deleteSessionsOf(db: DashboardDb, userId: string): Promise<number> {
  const r = await db.deleteFrom('dashboard.sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Marks the user's open sign-in links used (a new link replaces them). */
export async function closeInvitesOf(db: DashboardDb, userId: string, at: Date) {
  await db
    .updateTable('dashboard.invites')
    .set({ used_at: at })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}

/** Removes the password: the user signs in again only through a new sign-in link. */
export async function clearPassword(db: DashboardDb, userId: string, at: Date) {
  await db
    .updateTable('dashboard.users')
    .set({ password_hash: sql<null>`null`, updated_at: at })
    .where('id', '=', userId)
    .execute();
}
