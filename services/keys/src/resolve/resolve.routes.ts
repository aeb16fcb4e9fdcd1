import type { ServiceVerifier } from '@tollgate/auth';
import { resolveKey } from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import { Router } from 'express';
import type { z } from 'zod';
import { serviceCaller } from '../http/caller';
import { parseBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';

/**
 * `POST /internal/keys/resolve` {digest}: the proxy's cache miss (or pending entry). Answers the
 * CachedKey (disabled/revoked included: the proxy decides) and fills the cache with the version CAS;
 * 404 writes the negative entry. Callers: the proxy only.
 */
export function resolveRoutes(deps: { keys: KeyService; verifier: ServiceVerifier }): Router {
  const router = Router();
  router.post(resolveKey.path, serviceCaller(deps.verifier, ['proxy']), async (req, res) => {
    const { digest } = parseBody(resolveKey.request, req.body);
    const key = await deps.keys.resolve(digest);
    if (!key) throw notFound('No key with this digest');
    const answer: z.input<typeof resolveKey.response> = { data: key };
    res.json(answer);
  });
  return router;
}
