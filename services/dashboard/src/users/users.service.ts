import { AppError, notFound } from '@tollgate/errors';
import { insertInvite } from '../auth/auth.repository';
import { digestToken, newToken } from '../auth/tokens';
import type { DashboardDb, Role, User } from '../database';
import {
  clearPassword,
  closeInvitesOf,
  deleteSessionsOf,
  deleteUser,
  lockActiveOwners,
  lockUser,
  setRole,
} from './users.repository';
import { recordUserChange, type UserActor } from './users-audit';

/**
 * What an owner does to the users of their account: change a role, remove a user (or cancel an
 * invitation), end a user's sessions, issue a new sign-in link (a re-sent invitation, or a password
 * reset). The account never loses its last owner who can sign in. Every change runs in one
 * transaction with the user (and the account's owners) locked.
 */
export interface UsersService {
  /** `actor` (setRole, remove, newSignInLink): written to dashboard.audit_log in the change's transaction. */
  setRole(accountId: string, userId: string, role: Role, actor: UserActor): Promise<void>;
  remove(accountId: string, userId: string, actor: UserActor): Promise<void>;
  /** Audited as `user.sessions_end` (only when a session ended). */
  endSessions(accountId: string, userId: string, actor: UserActor): Promise<number>;
  /** Invited user: a new invitation. Active user: password reset (password cleared, sessions ended). */
  newSignInLink(
    accountId: string,
    userId: string,
    actor: UserActor,
  ): Promise<{ token: string; expiresAt: Date; kind: 'invitation' | 'password_reset' }>;
}

const lastOwner = () =>
  new AppError('conflict', 'The account would have no owner left: make another user an owner first', {
    reason: 'last_owner',
  });

export function createUsersService(o: {
  db: DashboardDb;
  clock: () => Date;
  inviteTtlMs: number;
}): UsersService {
  /** Runs `fn` with the user locked; 404 unless the user is the account's. */
  const withUser = <T>(accountId: string, userId: string, fn: (trx: DashboardDb, u: User) => Promise<T>) =>
    o.db.transaction().execute(async (trx) => {
      // Owners first, then the user: every path takes the locks in the same order.
      await lockActiveOwners(trx, accountId);
      const user = await lockUser(trx, accountId, userId);
      if (!user) throw notFound(`No user ${userId} in this account`);
      return fn(trx, user);
    });

  /** Refuses a change after which no owner with a password is left. */
  async function keepAnOwner(trx: DashboardDb, accountId: string, user: User) {
    if (user.role !== 'owner' || (user.password_hash === null && user.sso_subject === null)) return;
    const owners = await lockActiveOwners(trx, accountId);
    if (owners.filter((id) => id !== user.id).length === 0) throw lastOwner();
  }

  return {
    setRole: (accountId, userId, role, actor) =>
      withUser(accountId, userId, async (trx, user) => {
        if (user.role === role) return;
        if (role !== 'owner') await keepAnOwner(trx, accountId, user);
        await setRole(trx, user.id, role, o.clock());
        await recordUserChange(trx, actor, {
          accountId,
          action: 'user.role',
          userId: user.id,
          before: { email: user.email, role: user.role },
          after: { email: user.email, role },
        });
      }),

    remove: (accountId, userId, actor) =>
      withUser(accountId, userId, async (trx, user) => {
        await keepAnOwner(trx, accountId, user);
        await deleteUser(trx, user.id);
        await recordUserChange(trx, actor, {
          accountId,
          action: 'user.remove',
          userId: user.id,
          before: { email: user.email, role: user.role },
          after: null,
        });
      }),

    endSessions: (accountId, userId, actor) =>
      withUser(accountId, userId, async (trx, user) => {
        const ended = await deleteSessionsOf(trx, user.id);
        if (ended > 0)
          await recordUserChange(trx, actor, {
            accountId,
            action: 'user.sessions_end',
            userId: user.id,
            before: { email: user.email, sessions: ended },
            after: { email: user.email, sessions: 0 },
          });
        return ended;
      }),

    newSignInLink: (accountId, userId, actor) =>
      withUser(accountId, userId, async (trx, user) => {
        const now = o.clock();
        const reset = user.password_hash !== null;
        if (reset) {
          await keepAnOwner(trx, accountId, user);
          await clearPassword(trx, user.id, now);
          await deleteSessionsOf(trx, user.id);
        }
        await closeInvitesOf(trx, user.id, now);
        const token = newToken();
        const expiresAt = new Date(now.getTime() + o.inviteTtlMs);
        await insertInvite(trx, { digest: digestToken(token), userId: user.id, createdAt: now, expiresAt });
        await recordUserChange(trx, actor, {
          accountId,
          action: reset ? 'user.password_reset' : 'user.reinvite',
          userId: user.id,
          before: null,
          after: { email: user.email, expires_at: expiresAt.toISOString() },
        });
        return { token, expiresAt, kind: reset ? ('password_reset' as const) : ('invitation' as const) };
      }),
  };
}
