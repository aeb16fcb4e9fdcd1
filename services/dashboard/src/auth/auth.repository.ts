import { sql } from 'kysely';
import type { DashboardDb, Role, User } from '../database';

/** The users with this email (one per account at most), oldest first, at most 10. */
export async function findUsersByEmail(db: DashboardDb, email: string): Promise<User[]> {
  return db
    .selectFrom('dashboard.users')
    .selectAll()
    .where(sql<boolean>`lower(email) = lower(${email})`)
    .orderBy('created_at', 'asc')
    .limit(10)
    .execute();
}

export async function insertUser(
  db: DashboardDb,
  u: { accountId: string; email: string; displayName: string; role: Role; passwordHash: string | null },
): Promise<User> {
  return db
    .insertInto('dashboard.users')
    .values({
      account_id: u.accountId,
      email: u.email,
      display_name: u.displayName,
      role: u.role,
      password_hash: u.passwordHash,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listUsers(db: DashboardDb, accountId: string): Promise<User[]> {
  return db
    .selectFrom('dashboard.users')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'asc')
    .execute();
}

export async function setPassword(db: DashboardDb, userId: string, passwordHash: string, at: Date) {
  await db
    .updateTable('dashboard.users')
    .set({ password_hash: passwordHash, updated_at: at })
    .where('id', '=', userId)
    .execute();
}

export async function insertSession(
  db: DashboardDb,
  s: { digest: string; userId: string; csrfToken: string; createdAt: Date; expiresAt: Date },
) {
  await db
    .insertInto('dashboard.sessions')
    .values({
      digest: s.digest,
      user_id: s.userId,
      csrf_token: s.csrfToken,
      created_at: s.createdAt,
      expires_at: s.expiresAt,
      last_seen_at: s.createdAt,
    })
    .execute();
}

/** The session and its user, if the session exists (expiry is checked by the caller). */
export async function findSession(db: DashboardDb, digest: string) {
  return db
    .selectFrom('dashboard.sessions as s')
    .innerJoin('dashboard.users as u', 'u.id', 's.user_id')
    .select([
      's.digest',
      's.csrf_token',
      's.expires_at',
      's.last_seen_at',
      'u.id as user_id',
      'u.account_id',
      'u.email',
      'u.display_name',
      'u.role',
    ])
    .where('s.digest', '=', digest)
    .executeTakeFirst();
}

export async function deleteSession(db: DashboardDb, digest: string) {
  await db.deleteFrom('dashboard.sessions').where('digest', '=', digest).execute();
}

/** Sessions past their absolute expiry, or idle since before `idleSince`. */
export async function deleteExpiredSessions(db: DashboardDb, now: Date, idleSince: Date) {
  await db
    .deleteFrom('dashboard.sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
    .execute();
}

export async function touchSession(db: DashboardDb, digest: string, at: Date) {
  await db.updateTable('dashboard.sessions').set({ last_seen_at: at }).where('digest', '=', digest).execute();
}

export async function insertInvite(
  db: DashboardDb,
  i: { digest: string; userId: string; createdAt: Date; expiresAt: Date },
) {
  await db
    .insertInto('dashboard.invites')
    .values({ digest: i.digest, user_id: i.userId, created_at: i.createdAt, expires_at: i.expiresAt })
    .execute();
}

/** Marks an unused, unexpired invitation used (once, atomically); returns its user id. */
export async function consumeInvite(db: DashboardDb, digest: string, now: Date): Promise<string | undefined> {
  const row = await db
    .updateTable('dashboard.invites')
    .set({ used_at: now })
    .where('digest', '=', digest)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('user_id')
    .executeTakeFirst();
  return row?.user_id;
}

/** The user an unused, unexpired invitation is for, without using it. */
export async function findOpenInvite(
  db: DashboardDb,
  digest: string,
  now: Date,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('dashboard.invites')
    .select('user_id')
    .where('digest', '=', digest)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row?.user_id;
}
