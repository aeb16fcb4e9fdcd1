import { badRequest } from '@tollgate/errors';
import { type ClientAddress, parseId } from '@tollgate/http';
import { Router } from 'express';
import { requireOwner, requireUser, userOf } from '../http/session';
import type { WebhooksClient } from '../upstream/webhooks-client';
import { actingOf } from './acting';

const idOf = (value: unknown) => parseId(value, 'id', 'a webhook id');
const objectBody = (body: unknown): object => {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
  return body;
};

/**
 * The Alerts page's API: the account's webhook endpoints (owners change them; every user reads them
 * and their delivery log) and the send-test button. Billing owns and checks all of it.
 */
export function webhooksRoutes(deps: { webhooks: WebhooksClient; clientAddress: ClientAddress }): Router {
  const { webhooks } = deps;
  const router = Router();
  const account = (res: Parameters<typeof userOf>[0]) => userOf(res).accountId;
  // Who changes an endpoint, for billing's audit log.
  const acting = actingOf(deps.clientAddress);
  router.get('/api/webhooks', requireUser, async (_req, res) => {
    res.json({ data: await webhooks.list(account(res)) });
  });
  router.post('/api/webhooks', requireUser, requireOwner, async (req, res) => {
    res
      .status(201)
      .json({ data: await webhooks.create(account(res), objectBody(req.body), acting(req, res)) });
  });
  router.patch('/api/webhooks/:id', requireUser, requireOwner, async (req, res) => {
    res.json({
      data: await webhooks.update(account(res), idOf(req.params.id), objectBody(req.body), acting(req, res)),
    });
  });
  router.delete('/api/webhooks/:id', requireUser, requireOwner, async (req, res) => {
    await webhooks.remove(account(res), idOf(req.params.id), acting(req, res));
    res.status(204).end();
  });
  router.post('/api/webhooks/:id/test', requireUser, requireOwner, async (req, res) => {
    res.json({ data: await webhooks.test(account(res), idOf(req.params.id)) });
  });
  router.get('/api/webhooks/:id/deliveries', requireUser, async (req, res) => {
    const limit = req.query.limit;
    if (limit !== undefined && typeof limit !== 'string') throw badRequest('limit: must be given once');
    res.json({ data: await webhooks.deliveries(account(res), idOf(req.params.id), limit) });
  });
  return router;
}
