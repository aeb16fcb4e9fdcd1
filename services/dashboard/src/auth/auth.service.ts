import { AppError, badRequest, unauthorized } from '@tollgate/errors';
import type { DashboardDb, Role } from '../database';
import { recordUserChange, type UserActor } from '../users/users-audit';
import {
  consumeInvite,
  deleteExpiredSessions,
  deleteSession,
  findOpenInvite,
  findSession,
  findUsersByEmail,
  insertInvite,
  insertSession,
  insertUser,
  setPassword,
  touchSession,
} from './auth.repository';
import { hashPassword, needsRehash, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from './password';
import { SignInThrottle } from './sign-in-throttle';
import { digestToken, newToken } from './tokens';

/** The signed-in user as every route sees it. */
export interface SessionUser {
  id: string;
  accountId: string;
  email: string;
  displayName: string;
  role: Role;
  csrfToken: string;
  /** digest of the cookie value (the session's key). */
  sessionDigest: string;
  expiresAt: Date;
}

export interface NewSession {
  /** The cookie value: given to the browser once, stored only as a digest. */
  token: string;
  expiresAt: Date;
}

export interface AuthOptions {
  db: DashboardDb;
  clock: () => Date;
  sessionTtlMs: number;
  /** A session unused this long ends (however long its absolute lifetime). */
  sessionIdleMs: number;
  inviteTtlMs: number;
  /** Sign-in throttle (sign-in-throttle.ts): free failures per (email, address) and window. */
  maxFailures: number;
  windowMs: number;
  /** First backoff past `maxFailures` (doubling per further failure, at most `windowMs`; default 1 s). */
  backoffBaseMs?: number;
}

export interface AuthService {
  /**
   * 401 on a wrong email or password (same answer for both). 429 while the (email, client address)
   * pair backs off after `maxFailures` failures in the window, or the address after 10× that.
   */
  signIn(email: string, password: string, clientAddress: string): Promise<NewSession>;
  /** The session's user, or null when the cookie names no live session (an expired one is deleted). */
  session(token: string): Promise<SessionUser | null>;
  signOut(sessionDigest: string): Promise<void>;
  /** Creates a user without a password and a one-time sign-in link token. 409 if the email is taken in the account. */
  /** `actor`: the owner inviting (audited in the same transaction); null = the admin CLI. */
  invite(input: {
    accountId: string;
    email: string;
    displayName: string;
    role: Role;
    actor: UserActor | null;
  }): Promise<{
    userId: string;
    token: string;
    expiresAt: Date;
  }>;
  /** Sets the invited user's password (once per link) and signs them in. */
  acceptInvite(token: string, password: string): Promise<NewSession>;
  /** A new session for a user another way has signed in (single sign-on). */
  startSession(userId: string): Promise<NewSession>;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function checkPassword(password: string) {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw badRequest(`password: must be ${PASSWORD_MIN}-${PASSWORD_MAX} characters`, { field: 'password' });
  }
}

export function createAuthService(o: AuthOptions): AuthService {
  const { db } = o;
  let lastSweep = 0;
  const throttle = new SignInThrottle({
    db,
    clock: o.clock,
    maxFailures: o.maxFailures,
    windowMs: o.windowMs,
    backoffBaseMs: o.backoffBaseMs ?? 1000,
  });

  async function startSession(userId: string): Promise<NewSession> {
    const now = o.clock();
    const token = newToken();
    const expiresAt = new Date(now.getTime() + o.sessionTtlMs);
    await insertSession(db, {
      digest: digestToken(token),
      userId,
      csrfToken: newToken(),
      createdAt: now,
      expiresAt,
    });
    if (now.getTime() - lastSweep > 60_000) {
      lastSweep = now.getTime();
      await deleteExpiredSessions(db, now, new Date(now.getTime() - o.sessionIdleMs));
    }
    return { token, expiresAt };
  }

  /**
   * The user whose password this is among the users with this email (one per account at most),
   * or null after the same work as a wrong password. A hash of weaker parameters than today's is
   * replaced by a new one (the plaintext is at hand only now).
   */
  async function checkCredentials(email: string, password: string): Promise<string | null> {
    const users = (await findUsersByEmail(db, email.trim())).filter((u) => u.password_hash !== null);
    if (users.length === 0) {
      await verifyPassword(password, null);
      return null;
    }
    for (const user of users) {
      const stored = user.password_hash as string;
      if (!(await verifyPassword(password, stored))) continue;
      if (needsRehash(stored)) await setPassword(db, user.id, await hashPassword(password), o.clock());
      return user.id;
    }
    return null;
  }

  /** 60 s: how stale `last_seen_at` may be (one write a minute per active session, not one per request). */
  const TOUCH_MS = 60_000;

  return {
    async signIn(email, password, clientAddress) {
      // Counted as a failure before the password is checked; 429 while the (email, address) pair or
      // the address backs off (sign-in-throttle.ts); a success takes the attempt back.
      const attempt = await throttle.admit(email, clientAddress);
      const userId = await checkCredentials(email, password);
      if (!userId) throw unauthorized('Wrong email or password');
      await throttle.succeeded(attempt);
      return startSession(userId);
    },

    async session(token) {
      const digest = digestToken(token);
      const row = await findSession(db, digest);
      if (!row) return null;
      const now = o.clock().getTime();
      if (row.expires_at.getTime() <= now || row.last_seen_at.getTime() + o.sessionIdleMs <= now) {
        await deleteSession(db, digest);
        return null;
      }
      if (now - row.last_seen_at.getTime() >= TOUCH_MS) await touchSession(db, digest, new Date(now));
      return {
        id: row.user_id,
        accountId: row.account_id,
        email: row.email,
        displayName: row.display_name,
        role: row.role,
        csrfToken: row.csrf_token,
        sessionDigest: row.digest,
        expiresAt: row.expires_at,
      };
    },

    signOut: (digest) => deleteSession(db, digest),

    startSession,

    async invite(input) {
      const email = input.email.trim();
      if (!EMAIL.test(email)) throw badRequest('email: expected an email address', { field: 'email' });
      const displayName = input.displayName.trim();
      if (!displayName || displayName.length > 200 || displayName.includes('\u0000')) {
        throw badRequest('display_name: must be 1-200 characters', { field: 'display_name' });
      }
      const now = o.clock();
      const token = newToken();
      const expiresAt = new Date(now.getTime() + o.inviteTtlMs);
      try {
        const userId = await db.transaction().execute(async (trx) => {
          const user = await insertUser(trx, {
            accountId: input.accountId,
            email,
            displayName,
            role: input.role,
            passwordHash: null,
          });
          await insertInvite(trx, { digest: digestToken(token), userId: user.id, createdAt: now, expiresAt });
          await recordUserChange(trx, input.actor, {
            accountId: input.accountId,
            action: 'user.invite',
            userId: user.id,
            before: null,
            after: { email, role: input.role },
          });
          return user.id;
        });
        return { userId, token, expiresAt };
      } catch (err) {
        if ((err as { code?: string }).code === '23505') {
          throw new AppError('conflict', 'A user with this email already exists in this account', {
            field: 'email',
          });
        }
        throw err;
      }
    },

    async acceptInvite(token, password) {
      checkPassword(password);
      const invalid = () => new AppError('not_found', 'This sign-in link is invalid, used or expired');
      // The link is checked before the password is hashed (scrypt, 32 MiB), so that unauthenticated
      // requests with made-up tokens cost one indexed read, not a hash; the link is still consumed
      // atomically below, after hashing, so a link used meanwhile is refused then.
      if (!(await findOpenInvite(db, digestToken(token), o.clock()))) throw invalid();
      const hash = await hashPassword(password);
      const now = o.clock();
      const userId = await db.transaction().execute(async (trx) => {
        const id = await consumeInvite(trx, digestToken(token), now);
        if (id) await setPassword(trx, id, hash, now);
        return id;
      });
      if (!userId) throw invalid();
      return startSession(userId);
    },
  };
}
