import type { ClientAddress } from '@tollgate/http';
import type { KeyCache } from '@tollgate/key-cache';
import type { Handler, ProxyRequest, ProxyResponse } from '../http/types';
import { type Authenticator, authMiddleware, requireScope } from './authenticate';
import type { RecallDeps } from './recall';

/** The authentication steps the routes mount (http/app.ts, http/doors.ts). */
export interface AuthSteps {
  /** Authentication (key cache, keys service), as a route step. */
  auth: Handler;
  inference: Handler;
  management: Handler;
  /** Authentication and, when given, the scope check, as a promise (rejected with their error). */
  authenticated(scope: 'inference' | null): (req: ProxyRequest, res: ProxyResponse) => Promise<void>;
  /** The front doors' authentication: recalled key records when their admission can check them. */
  doors: Handler;
  /** What the pipeline needs to check a recalled record and to come back from a stale one (recall.ts). */
  recall: RecallDeps | undefined;
}

/**
 * The routes' authentication. `clientAddress`: the caller's address for the unknown-key limit
 * (TRUSTED_PROXIES). `recall` (a spend guard whose admission script checks key records,
 * docs/architecture.md): the front doors may serve a key with the record this process read before;
 * the way back when its check fails — forget the record, authenticate afresh — is `recall`'s.
 */
export function authSteps(
  authenticator: Authenticator,
  keyCache: KeyCache,
  options: { recall: boolean; clientAddress?: ClientAddress },
): AuthSteps {
  const { recall, clientAddress } = options;
  const auth = authMiddleware(authenticator, Date.now, { clientAddress });
  const authenticated = (scope: 'inference' | null) => {
    const check = scope === null ? null : requireScope(scope);
    return (req: ProxyRequest, res: ProxyResponse) =>
      new Promise<void>((resolve, reject) => {
        // Neither step rejects: each reports through its callback.
        void auth(req, res, (err?: unknown) => {
          if (err) reject(err);
          else if (check === null) resolve();
          else void check(req, res, (e?: unknown) => (e ? reject(e) : resolve()));
        });
      });
  };
  return {
    auth,
    inference: requireScope('inference'),
    management: requireScope('management'),
    authenticated,
    doors: recall ? authMiddleware(authenticator, Date.now, { recall: true, clientAddress }) : auth,
    recall: recall
      ? {
          keyCache,
          forget: (digest) => authenticator.forget(digest),
          used: (keyId) => authenticator.used(keyId),
          reauthenticate: authenticated('inference'),
          now: Date.now,
        }
      : undefined,
  };
}
