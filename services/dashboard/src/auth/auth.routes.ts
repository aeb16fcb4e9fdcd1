import type { DashboardAnswerInput } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { type ClientAddress, parseInput } from '@tollgate/http';
import { type RequestHandler, Router } from 'express';
import { z } from 'zod';
import { clearSessionCookie, requireUser, setSessionCookie, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';
import type { AuthService } from './auth.service';

const signInBody = z.strictObject({
  email: z.string({ error: 'expected a string' }).min(1, 'is required').max(320),
  password: z.string({ error: 'expected a string' }).min(1, 'is required').max(1000),
});

const acceptBody = z.strictObject({
  token: z.string({ error: 'expected a string' }).min(1).max(200),
  password: z.string({ error: 'expected a string' }),
});

/** Sign-in, sign-out, the current user (with the CSRF token), accepting an invitation. */
export function authRoutes(deps: {
  auth: AuthService;
  client: InternalClient;
  secureCookie: boolean;
  /** The client's address as TRUSTED_PROXIES resolves it (the sign-in throttle's key, with the email). */
  clientAddress: ClientAddress;
  /** PASSWORD_SIGN_IN: off refuses passwords (sign-in and invitations accepted with one), 403. */
  passwordSignIn: boolean;
}): Router {
  const router = Router();
  const passwordsOn: RequestHandler = (_req, _res, next) => {
    if (!deps.passwordSignIn)
      throw new AppError('forbidden', 'Password sign-in is off: sign in with single sign-on', {
        reason: 'password_sign_in_off',
      });
    next();
  };

  router.post('/api/session', passwordsOn, async (req, res) => {
    const body = parseInput(signInBody, req.body);
    const session = await deps.auth.signIn(body.email, body.password, deps.clientAddress(req));
    setSessionCookie(res, session, deps.secureCookie);
    res.status(204).end();
  });

  router.post('/api/invites/accept', passwordsOn, async (req, res) => {
    const body = parseInput(acceptBody, req.body);
    const session = await deps.auth.acceptInvite(body.token, body.password);
    setSessionCookie(res, session, deps.secureCookie);
    res.status(204).end();
  });

  router.delete('/api/session', requireUser, async (_req, res) => {
    await deps.auth.signOut(userOf(res).sessionDigest);
    clearSessionCookie(res, deps.secureCookie);
    res.status(204).end();
  });

  router.get('/api/me', requireUser, async (_req, res) => {
    const u = userOf(res);
    const account = await deps.client.account(u.accountId);
    const answer: DashboardAnswerInput<'me'> = {
      data: {
        user: { id: u.id, email: u.email, display_name: u.displayName, role: u.role },
        account,
        csrf_token: u.csrfToken,
        session_expires_at: u.expiresAt.toISOString(),
      },
    };
    res.json(answer);
  });

  return router;
}
