import { notFound } from '@tollgate/errors';
import { Router } from 'express';
import { serviceCaller } from '../http/caller';
import { parseBody, resolveBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';

/**
 * `POST /internal/keys/resolve` {digest}: the proxy's cache miss (or pending entry). Answers the
 * CachedKey (disabled/revoked included: the proxy decides) and fills the cache with the version CAS;
 * 404 writes the negative entry.
 */
export function resolveRoutes(deps: { keys: KeyService; secret: string }): Router {
  const router = Router();
  router.post('/internal/keys/resolve', serviceCaller(deps.secret), async (req, res) => {
    const { digest } = parseBody(resolveBody, req.body);
    const key = await deps.keys.resolve(digest);
    if (!key) throw notFound('No key with this digest');
    res.json({ data: key });
  });
  return router;
}
