import type { KeyScope, ServiceVerifier } from '@tollgate/auth';
import { forbiddenScope } from '@tollgate/errors';
import { keyCallerClaims } from '@tollgate/http';
import type { RequestHandler, Response } from 'express';
import type { KeyService } from '../keys/keys.service';
import type { ApiKey } from '../keys/keys.table';

export { serviceCaller } from '@tollgate/http';

/**
 * Public routes arrive through the proxy with a `{kind:'key'}` token the proxy signed, naming the caller's key.
 * Anything else is 401. The key is re-read (it may have been disabled since the proxy checked it),
 * then the scope is checked: `management` or `any` (both scopes).
 */
export function keyCaller(
  deps: { verifier: ServiceVerifier; keys: KeyService },
  scope: KeyScope | 'any',
): RequestHandler {
  return async (req, res, next) => {
    const row = await deps.keys.authenticateCaller(keyCallerClaims(req, deps.verifier));
    if (scope !== 'any' && row.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = row;
    next();
  };
}

export const callerOf = (res: Response): ApiKey => res.locals.caller as ApiKey;
