import type { CreateAccountKeyRequest, UpdateAccountKeyRequest } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { type ClientAddress, parseId } from '@tollgate/http';
import { Router } from 'express';
import { requireOwner, requireUser, userOf } from '../http/session';
import { visibleKeys } from '../teams/team-scope';
import type { InternalClient } from '../upstream/internal-client';
import { actingOf } from './acting';

const hashOf = (value: unknown) => parseId(value, 'hash', 'a key id');
/** A JSON object body, relayed as is: the keys service parses it with the contract (its 400 names the field). */
const objectBody = <T>(body: unknown): T => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
  }
  return body as T;
};

/**
 * Every key of the signed-in user's account (management keys included). The keys service validates
 * bodies (its 400 messages name the field); the account always comes from the session.
 */
export function keysRoutes(deps: { client: InternalClient; clientAddress: ClientAddress }): Router {
  const router = Router();
  // The keys service writes the audit entry: the signed-in user and the client's address.
  const acting = actingOf(deps.clientAddress);
  router.get('/api/keys', requireUser, async (req, res) => {
    const include = req.query.include_revoked;
    if (include !== undefined && include !== 'true' && include !== 'false') {
      throw badRequest('include_revoked: must be true or false');
    }
    // Team viewers: their teams' keys only.
    res.json({
      data: visibleKeys(res, await deps.client.listKeys(userOf(res).accountId, include === 'true')),
    });
  });
  router.post('/api/keys', requireUser, requireOwner, async (req, res) => {
    res.status(201).json({
      data: await deps.client.createKey(
        userOf(res).accountId,
        objectBody<CreateAccountKeyRequest>(req.body),
        acting(req, res),
      ),
    });
  });
  router.patch('/api/keys/:hash', requireUser, requireOwner, async (req, res) => {
    const data = await deps.client.updateKey(
      userOf(res).accountId,
      hashOf(req.params.hash),
      objectBody<UpdateAccountKeyRequest>(req.body),
      acting(req, res),
    );
    res.json({ data });
  });
  router.delete('/api/keys/:hash', requireUser, requireOwner, async (req, res) => {
    const data = await deps.client.revokeKey(
      userOf(res).accountId,
      hashOf(req.params.hash),
      acting(req, res),
    );
    res.json({ data });
  });
  return router;
}
