import { type KeyScope, SERVICE_TOKEN_HEADER, verifyServiceToken } from '@tollgate/auth';
import { forbiddenScope, unauthorized } from '@tollgate/errors';
import type { RequestHandler, Response } from 'express';
import type { KeyService } from '../keys/keys.service';
import type { ApiKey } from '../keys/keys.table';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const tokenOf = (header: string | string[] | undefined) => (typeof header === 'string' ? header : undefined);

/**
 * Public routes arrive through the proxy with a `{kind:'key'}` service token naming the caller's key.
 * Anything else is 401. The key is re-read (it may have been disabled since the proxy checked it),
 * then the scope is checked: `management` or `any` (both scopes).
 */
export function keyCaller(
  deps: { secret: string; keys: KeyService },
  scope: KeyScope | 'any',
): RequestHandler {
  return async (req, res, next) => {
    const token = tokenOf(req.headers[SERVICE_TOKEN_HEADER]);
    const claims = token ? verifyServiceToken(token, deps.secret) : null;
    if (claims?.kind !== 'key' || !UUID.test(claims.keyId) || !UUID.test(claims.accountId)) {
      throw unauthorized('Missing or invalid caller identity');
    }
    const row = await deps.keys.authenticateCaller(claims);
    if (scope !== 'any' && row.scope !== scope) throw forbiddenScope(scope);
    res.locals.caller = row;
    next();
  };
}

export const callerOf = (res: Response): ApiKey => res.locals.caller as ApiKey;

/** Internal routes: a `{kind:'service'}` token only. */
export function serviceCaller(secret: string): RequestHandler {
  return (req, _res, next) => {
    const token = tokenOf(req.headers[SERVICE_TOKEN_HEADER]);
    const claims = token ? verifyServiceToken(token, secret) : null;
    if (claims?.kind !== 'service') throw unauthorized('Missing or invalid service token');
    next();
  };
}
