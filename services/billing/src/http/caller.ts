import type { KeyScope, ServiceVerifier } from '@tollgate/auth';
import { forbiddenScope, unauthorized } from '@tollgate/errors';
import { type KeyCallerClaims, keyCallerClaims } from '@tollgate/http';
import type { RequestHandler, Response } from 'express';
import type { KeyOwners } from '../keys/key-owners';

export { serviceCaller } from '@tollgate/http';

/**
 * Caller routes arrive through the proxy with a `{kind:'key'}` token the proxy signed, naming the
 * caller's key (the proxy authenticated the key itself). Anything else is 401. The token's claims are
 * not taken on trust: the key is re-read from the keys service (it must exist, belong to the token's
 * account, have its scope, and be neither disabled, revoked nor expired — it may have changed since
 * the proxy checked it), as the keys service does for its own caller routes. Then the scope is
 * checked: the wrong one is 403.
 */
export function keyCaller(
  deps: { verifier: ServiceVerifier; owners: KeyOwners },
  scope: KeyScope | 'any',
): RequestHandler {
  return async (req, res, next) => {
    const claims = await keyCallerClaims(req, deps.verifier);
    const key = await deps.owners.read(claims.keyId);
    if (
      !key ||
      key.accountId !== claims.accountId ||
      key.scope !== claims.scope ||
      key.disabled ||
      key.revoked ||
      (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now())
    )
      throw unauthorized();
    if (scope !== 'any' && claims.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = claims;
    next();
  };
}

export const callerOf = (res: Response): KeyCallerClaims => res.locals.caller as KeyCallerClaims;
