import type { DashboardAnswerInput } from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import type { ClientAddress } from '@tollgate/http';
import { type Request, type Response, Router } from 'express';
import type { AuthService } from '../auth/auth.service';
import { parseCookies, setSessionCookie } from '../http/session';
import type { SsoService } from './sso.service';

/**
 * The browser's binding of a started sign-in: HttpOnly, only sent to /api/sso, SameSite=Lax (the
 * provider's redirect back is a cross-site top-level navigation, which a Strict cookie would miss).
 */
const SSO_COOKIE = 'tg_sso';
const ssoCookieOptions = (secure: boolean) => ({
  httpOnly: true,
  sameSite: 'lax' as const,
  secure,
  path: '/api/sso',
});

/**
 * Single sign-on: `GET /api/sso` (is it on, is password sign-in on: the sign-in page asks),
 * `GET /api/sso/start` (302 to the provider), `GET /api/sso/callback` (the provider's redirect back:
 * signs in, 302 to the app; a refused sign-in is a 4xx in the standard error envelope).
 */
export function ssoRoutes(deps: {
  sso: SsoService | null;
  auth: AuthService;
  passwordSignIn: boolean;
  publicUrl: string;
  redirectUrl: string | null;
  secureCookie: boolean;
  clientAddress: ClientAddress;
}): Router {
  const router = Router();
  const { sso } = deps;

  router.get('/api/sso', (_req, res) => {
    const answer: DashboardAnswerInput<'sso'> = {
      data: { enabled: sso !== null, password_sign_in: deps.passwordSignIn },
    };
    res.json(answer);
  });

  const enabled = (): SsoService => {
    if (!sso) throw notFound('Single sign-on is not configured');
    return sso;
  };

  router.get('/api/sso/start', async (_req, res) => {
    const started = await enabled().begin();
    res.cookie(SSO_COOKIE, started.cookie, { ...ssoCookieOptions(deps.secureCookie), maxAge: 10 * 60_000 });
    res.redirect(302, started.url.href);
  });

  router.get('/api/sso/callback', async (req: Request, res: Response) => {
    const service = enabled();
    // The URL the provider redirected to: the configured redirect with the query as received.
    const callbackUrl = new URL(deps.redirectUrl as string);
    const query = req.originalUrl.indexOf('?');
    callbackUrl.search = query >= 0 ? req.originalUrl.slice(query) : '';
    res.clearCookie(SSO_COOKIE, ssoCookieOptions(deps.secureCookie));
    const userId = await service.complete({
      cookie: parseCookies(req.headers.cookie).get(SSO_COOKIE),
      callbackUrl,
      address: deps.clientAddress(req),
    });
    setSessionCookie(res, await deps.auth.startSession(userId), deps.secureCookie);
    res.redirect(302, `${deps.publicUrl.replace(/\/$/, '')}/#/overview`);
  });

  return router;
}
