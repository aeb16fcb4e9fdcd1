import type { KeyScope, ServiceVerifier } from '@tollgate/auth';
import { forbiddenScope } from '@tollgate/errors';
import { type KeyCallerClaims, keyCallerClaims } from '@tollgate/http';
import type { RequestHandler, Response } from 'express';

export { serviceCaller } from '@tollgate/http';

/**
 * Caller routes arrive through the proxy with a `{kind:'key'}` token the proxy signed, naming the caller's key
 * (the proxy authenticated the key itself). Anything else is 401; the wrong scope is 403.
 */
export function keyCaller(verifier: ServiceVerifier, scope: KeyScope | 'any'): RequestHandler {
  return (req, res, next) => {
    const claims = keyCallerClaims(req, verifier);
    if (scope !== 'any' && claims.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = claims;
    next();
  };
}

export const callerOf = (res: Response): KeyCallerClaims => res.locals.caller as KeyCallerClaims;
