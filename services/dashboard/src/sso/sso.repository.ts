import { sql } from 'kysely';
import type { DashboardDb, Role, User } from '../database';

/** Stores a started sign-in (the cookie's digest, never the cookie) and sweeps expired ones. */
export async function insertSsoLogin(
  db: DashboardDb,
  l: { digest: string; state: string; nonce: string; codeVerifier: string; createdAt: Date; expiresAt: Date },
) {
  await db.deleteFrom('dashboard.sso_logins').where('expires_at', '<=', l.createdAt).execute();
  await db
    .insertInto('dashboard.sso_logins')
    .values({
      digest: l.digest,
      state: l.state,
      nonce: l.nonce,
      code_verifier: l.codeVerifier,
      created_at: l.createdAt,
      expires_at: l.expiresAt,
    })
    .execute();
}

/** Takes the started sign-in out (once: a replayed callback finds nothing), if unexpired. */
export async function consumeSsoLogin(db: DashboardDb, digest: string, now: Date) {
  const row = await db
    .deleteFrom('dashboard.sso_logins')
    .where('digest', '=', digest)
    .returningAll()
    .executeTakeFirst();
  return row && row.expires_at.getTime() > now.getTime() ? row : undefined;
}

/**
 * The account's user for this identity, locked: the one linked to the subject, else (only for a
 * verified email) the unlinked user with that email, e.g. invited before SSO.
 */
export async function lockSsoUser(
  db: DashboardDb,
  accountId: string,
  subject: string,
  verifiedEmail: string | null,
): Promise<User | undefined> {
  const linked = await db
    .selectFrom('dashboard.users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('sso_subject', '=', subject)
    .forUpdate()
    .executeTakeFirst();
  if (linked || !verifiedEmail) return linked;
  return db
    .selectFrom('dashboard.users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('sso_subject', 'is', null)
    .where(sql<boolean>`lower(email) = lower(${verifiedEmail})`)
    .forUpdate()
    .executeTakeFirst();
}

export async function insertSsoUser(
  db: DashboardDb,
  u: { accountId: string; subject: string; email: string; displayName: string; role: Role },
): Promise<User> {
  return db
    .insertInto('dashboard.users')
    .values({
      account_id: u.accountId,
      email: u.email,
      display_name: u.displayName,
      role: u.role,
      password_hash: null,
      sso_subject: u.subject,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateSsoUser(
  db: DashboardDb,
  userId: string,
  set: { subject: string; role: Role; at: Date },
) {
  await db
    .updateTable('dashboard.users')
    .set({ sso_subject: set.subject, role: set.role, updated_at: set.at })
    .where('id', '=', userId)
    .execute();
}
