import { safeEqual } from '@tollgate/auth';
import { AppError, badRequest } from '@tollgate/errors';
import { digestToken, newToken } from '../auth/tokens';
import type { DashboardDb, Role, User } from '../database';
import { replaceTeams, sameTeams, teamsOf } from '../teams/team-members.repository';
import { deleteUser } from '../users/users.repository';
import { recordUserChange, type UserActor } from '../users/users-audit';
import type { SsoClaims, SsoClient } from './sso.client';
import { mapGroups, type SsoSettings } from './sso.config';
import { consumeSsoLogin, insertSsoLogin, insertSsoUser, lockSsoUser, updateSsoUser } from './sso.repository';

/** How long a started sign-in may take at the provider. */
const LOGIN_TTL_MS = 10 * 60_000;

export interface SsoService {
  /** A new sign-in: the provider's URL and the cookie value binding it to this browser. */
  begin(): Promise<{ url: URL; cookie: string }>;
  /**
   * Finishes a sign-in: 400 without this browser's cookie, for an expired or used one, a state that
   * is not this browser's, or a response the provider's checks refuse (nonce, PKCE, signature);
   * 403 when the user's groups grant nothing (an existing user is then removed, their sessions
   * with them) or the user does not exist and OIDC_CREATE_USERS is off. Returns the user to sign in.
   */
  complete(input: { cookie: string | undefined; callbackUrl: URL; address: string }): Promise<string>;
}

const noAccess = (message: string) => new AppError('forbidden', message, { reason: 'sso_no_access' });

/** Role and teams of a user, as the audit log keeps them. */
const snapshot = (email: string, role: Role, teams: string[]) => ({ email, role, teams });

export function createSsoService(o: {
  db: DashboardDb;
  clock: () => Date;
  settings: SsoSettings;
  client: SsoClient;
}): SsoService {
  const { db, settings } = o;

  /** Applies the provider's word to the account's users in one transaction; null: access removed. */
  const apply = (claims: SsoClaims, address: string) =>
    db.transaction().execute(async (trx): Promise<string | null> => {
      const grant = mapGroups(settings, claims[settings.groupsClaim]);
      const email = typeof claims.email === 'string' ? claims.email.trim() : '';
      const verified = claims.email_verified === true && email ? email : null;
      const user = await lockSsoUser(trx, settings.accountId, claims.sub, verified);
      const actor = (u: User): UserActor => ({ userId: u.id, address });
      const change = (u: User, action: string, before: object | null, after: object | null) =>
        recordUserChange(trx, actor(u), {
          accountId: settings.accountId,
          action,
          userId: u.id,
          before,
          after,
        });
      if (!grant) {
        if (!user) return null;
        const teams = await teamsOf(trx, user.id);
        await deleteUser(trx, user.id);
        await change(user, 'sso.access_removed', snapshot(user.email, user.role, teams), null);
        return null;
      }
      let current = user;
      if (!current) {
        if (!settings.createUsers) return null;
        if (!email) throw noAccess('The identity provider sent no email (scope "email")');
        const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim() : email;
        current = await insertSsoUser(trx, {
          accountId: settings.accountId,
          subject: claims.sub,
          email,
          displayName: name.slice(0, 200),
          role: grant.role,
        });
        await replaceTeams(trx, settings.accountId, current.id, grant.teams);
        await change(current, 'sso.user_create', null, snapshot(email, grant.role, grant.teams));
      } else {
        const teams = await teamsOf(trx, current.id);
        if (current.role !== grant.role || current.sso_subject !== claims.sub)
          await updateSsoUser(trx, current.id, { subject: claims.sub, role: grant.role, at: o.clock() });
        if (current.role !== grant.role)
          await change(
            current,
            'sso.role',
            { email: current.email, role: current.role },
            { email: current.email, role: grant.role },
          );
        if (!sameTeams(teams, grant.teams)) {
          await replaceTeams(trx, settings.accountId, current.id, grant.teams);
          await change(
            current,
            'sso.teams',
            { email: current.email, teams },
            { email: current.email, teams: grant.teams },
          );
        }
      }
      await change(current, 'sso.sign_in', null, { email: current.email, subject: claims.sub });
      return current.id;
    });

  return {
    async begin() {
      const started = await o.client.start();
      const cookie = newToken();
      const now = o.clock();
      await insertSsoLogin(db, {
        digest: digestToken(cookie),
        state: started.state,
        nonce: started.nonce,
        codeVerifier: started.codeVerifier,
        createdAt: now,
        expiresAt: new Date(now.getTime() + LOGIN_TTL_MS),
      });
      return { url: started.url, cookie };
    },

    async complete({ cookie, callbackUrl, address }) {
      if (!cookie || cookie.length > 200)
        throw badRequest('No sign-in was started in this browser (cookie missing); start again', {
          reason: 'sso_state',
        });
      const login = await consumeSsoLogin(db, digestToken(cookie), o.clock());
      if (!login)
        throw badRequest('This sign-in expired or was already used; start again', { reason: 'sso_state' });
      const state = callbackUrl.searchParams.get('state') ?? '';
      if (!safeEqual(state, login.state))
        throw badRequest('state does not match the sign-in started in this browser', { reason: 'sso_state' });
      const claims = await o.client.finish(callbackUrl, {
        state: login.state,
        nonce: login.nonce,
        codeVerifier: login.code_verifier,
      });
      let userId: string | null;
      try {
        userId = await apply(claims, address);
      } catch (err) {
        if ((err as { code?: string }).code === '23505')
          throw new AppError(
            'conflict',
            'A user with this email exists but is not linked: an owner must remove it or the provider must verify the email',
          );
        throw err;
      }
      if (!userId) throw noAccess('Your identity provider grants you no access to this dashboard');
      return userId;
    },
  };
}
