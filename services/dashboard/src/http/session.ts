import { safeEqual } from '@tollgate/auth';
import { AppError, unauthorized } from '@tollgate/errors';
import type { CookieOptions, RequestHandler, Response } from 'express';
import type { AuthService, NewSession, SessionUser } from '../auth/auth.service';

/**
 * Sessions: an opaque random token in an HttpOnly, SameSite=Strict cookie (Secure outside
 * development), looked up server-side by its digest. CSRF: every state-changing request of a
 * signed-in user carries the session's CSRF token in `X-CSRF-Token` (synchronizer token; the SPA
 * reads it from GET /api/me), and no state-changing request is accepted from another Origin.
 */
/**
 * With `Secure`, the cookie carries the `__Host-` prefix: the browser then accepts it only from a
 * secure origin, with Path=/ and no Domain, so no sibling subdomain can set or shadow it.
 */
const sessionCookieName = (secure: boolean) => (secure ? '__Host-tg_session' : 'tg_session');
const CSRF_HEADER = 'x-csrf-token';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    const value = part.slice(i + 1).trim();
    if (!out.has(name)) {
      try {
        out.set(name, decodeURIComponent(value));
      } catch {
        // a malformed value is ignored (no session)
      }
    }
  }
  return out;
}

const cookieOptions = (secure: boolean): CookieOptions => ({
  httpOnly: true,
  sameSite: 'strict',
  secure,
  path: '/',
});

export function setSessionCookie(res: Response, s: NewSession, secure: boolean) {
  res.cookie(sessionCookieName(secure), s.token, { ...cookieOptions(secure), expires: s.expiresAt });
}

export function clearSessionCookie(res: Response, secure: boolean) {
  res.clearCookie(sessionCookieName(secure), cookieOptions(secure));
}

/** Loads the session named by the cookie (if any) into res.locals.user. */
export function loadSession(auth: AuthService, secure: boolean): RequestHandler {
  const name = sessionCookieName(secure);
  return async (req, res, next) => {
    const token = parseCookies(req.headers.cookie).get(name);
    if (token && token.length <= 200) {
      const user = await auth.session(token);
      if (user) res.locals.user = user;
    }
    next();
  };
}

function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

/**
 * Refuses state-changing requests whose Origin is not this site (403). The host is compared (not
 * the scheme), so a TLS-terminating proxy in front does not break it.
 */
export const sameOrigin: RequestHandler = (req, _res, next) => {
  if (UNSAFE.has(req.method)) {
    const origin = req.headers.origin;
    if (origin !== undefined && (origin === 'null' || hostOf(origin) !== req.headers.host)) {
      throw new AppError('forbidden', 'Cross-origin request refused', { reason: 'origin' });
    }
  }
  next();
};

/** 401 without a live session; for state-changing methods, 403 without the session's CSRF token. */
export const requireUser: RequestHandler = (req, res, next) => {
  const user = res.locals.user as SessionUser | undefined;
  if (!user) throw unauthorized('Sign in to continue');
  if (UNSAFE.has(req.method)) {
    const token = req.headers[CSRF_HEADER];
    if (typeof token !== 'string' || !safeEqual(token, user.csrfToken)) {
      throw new AppError('forbidden', 'Missing or invalid CSRF token', { reason: 'csrf' });
    }
  }
  next();
};

/** Owners change things; viewers see everything of their account and change nothing (403). */
export const requireOwner: RequestHandler = (_req, res, next) => {
  if ((res.locals.user as SessionUser).role !== 'owner') {
    throw new AppError('forbidden', 'Viewers cannot change anything; ask an owner of the account', {
      required_role: 'owner',
    });
  }
  next();
};

export const userOf = (res: Response): SessionUser => res.locals.user as SessionUser;
