import { type KeyScope, SERVICE_TOKEN_HEADER, type ServiceClaims, verifyServiceToken } from '@tollgate/auth';
import { forbiddenScope, unauthorized } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';

type KeyClaims = Extract<ServiceClaims, { kind: 'key' }>;

const tokenOf = (header: string | string[] | undefined) => (typeof header === 'string' ? header : undefined);

/**
 * Caller routes arrive through the proxy with a `{kind:'key'}` service token naming the caller's key
 * (the proxy authenticated the key itself). Anything else is 401; the wrong scope is 403.
 */
export function keyCaller(secret: string, scope: KeyScope | 'any'): RequestHandler {
  return (req, res, next) => {
    const token = tokenOf(req.headers[SERVICE_TOKEN_HEADER]);
    const claims = token ? verifyServiceToken(token, secret) : null;
    if (claims?.kind !== 'key') throw unauthorized('Missing or invalid caller identity');
    if (scope !== 'any' && claims.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = claims;
    next();
  };
}

export const callerOf = (res: Response): KeyClaims => res.locals.caller as KeyClaims;

/** Internal routes: a `{kind:'service'}` token only. */
export function serviceCaller(secret: string): RequestHandler {
  return (req, _res, next) => {
    const token = tokenOf(req.headers[SERVICE_TOKEN_HEADER]);
    const claims = token ? verifyServiceToken(token, secret) : null;
    if (claims?.kind !== 'service') throw unauthorized('Missing or invalid service token');
    next();
  };
}
