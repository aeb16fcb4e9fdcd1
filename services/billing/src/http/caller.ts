import type { KeyScope, ServiceVerifier } from '@tollgate/auth';
import { forbiddenScope, unauthorized } from '@tollgate/errors';
import { type KeyCallerClaims, keyCallerClaims } from '@tollgate/http';
import type { Request, RequestHandler, Response } from 'express';
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
    await confirmKey(deps.owners, claims, scope);
    res.locals.caller = claims;
    next();
  };
}

/**
 * A key-caller route that only reads: `read` runs *while* the key is re-read from the keys service
 * (instead of after it: the two waits overlapped, not added), and its result — or its error, a 400
 * for a bad query say — reaches the client only once the key is confirmed as `keyCaller` confirms it.
 * A key that fails the check gets the same 401 / 403 as there and the read's result is dropped, so
 * nothing is answered that `keyCaller` would not answer. `read` must have no side effects.
 */
export function keyCallerRead<T>(
  deps: { verifier: ServiceVerifier; owners: KeyOwners },
  scope: KeyScope | 'any',
  read: (req: Request, caller: KeyCallerClaims) => Promise<T>,
  answer: (res: Response, value: T) => void,
): RequestHandler {
  return async (req, res) => {
    const claims = await keyCallerClaims(req, deps.verifier);
    // Started now (a throw inside it becomes its rejection), observed here; its error is thrown
    // below, and only for a confirmed key.
    const value = (async () => read(req, claims))();
    value.catch(() => {});
    await confirmKey(deps.owners, claims, scope);
    res.locals.caller = claims;
    answer(res, await value);
  };
}

/** The key as it is now must exist, belong to the token's account, have its scope and work; then the route's scope. */
async function confirmKey(
  owners: KeyOwners,
  claims: KeyCallerClaims,
  scope: KeyScope | 'any',
): Promise<void> {
  const key = await owners.read(claims.keyId);
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
}

export const callerOf = (res: Response): KeyCallerClaims => res.locals.caller as KeyCallerClaims;
