import type { UpdateAccountRequest } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import type { ClientAddress } from '@tollgate/http';
import { Router } from 'express';
import { requireOwner, requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';
import { actingOf } from './acting';

/**
 * The account's settings (the Settings page): every user reads them with `GET /api/me`; owners change
 * them here. The keys service owns, validates (its 400 names the field) and audits them.
 */
export function settingsRoutes(deps: { client: InternalClient; clientAddress: ClientAddress }): Router {
  const router = Router();
  const acting = actingOf(deps.clientAddress);
  router.patch('/api/account', requireUser, requireOwner, async (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
    }
    const data = await deps.client.updateAccount(
      userOf(res).accountId,
      body as UpdateAccountRequest,
      acting(req, res),
    );
    res.json({ data });
  });
  return router;
}
