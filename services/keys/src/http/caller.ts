import type { KeyScope, ServiceVerifier } from '@tollgate/auth';
import { isCanonicalUuid } from '@tollgate/contracts';
import { badRequest, forbiddenScope } from '@tollgate/errors';
import { ACTOR_USER_HEADER, forwardedClientAddress, keyCallerClaims } from '@tollgate/http';
import type { Request, RequestHandler, Response } from 'express';
import type { AuditActor } from '../audit/audit';
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
    const row = await deps.keys.authenticateCaller(await keyCallerClaims(req, deps.verifier));
    if (scope !== 'any' && row.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = row;
    next();
  };
}

export const callerOf = (res: Response): ApiKey => res.locals.caller as ApiKey;

/** The audit actor of a public route: the management key `keyCaller` authenticated, and the client's address. */
export const managementActor = (req: Request, res: Response): AuditActor => ({
  kind: 'management_key',
  id: callerOf(res).id,
  address: forwardedClientAddress(req),
});

/** The audit actor of a dashboard call (service token checked): the signed-in user it names. */
export function dashboardActor(req: Request): AuditActor {
  const user = req.headers[ACTOR_USER_HEADER];
  if (!isCanonicalUuid(user)) {
    throw badRequest(`${ACTOR_USER_HEADER}: the dashboard user acting (a uuid) is required`);
  }
  return { kind: 'user', id: user, address: forwardedClientAddress(req) };
}
