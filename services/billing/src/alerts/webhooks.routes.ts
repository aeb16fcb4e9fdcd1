import type { ServiceVerifier } from '@tollgate/auth';
import {
  type createdWebhookSchema,
  createWebhookBody,
  isCanonicalUuid,
  updateWebhookBody,
  type WebhookAttempt,
  type WebhookObject,
  webhookAttemptsQuery,
  webhookParams,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { ACTOR_USER_HEADER, forwardedClientAddress, parseInput } from '@tollgate/http';
import { toDecimal, toUnits } from '@tollgate/money';
import { type Request, type RequestHandler, type Response, Router } from 'express';
import type { z } from 'zod';
import type { AuditActor } from '../audit/audit';
import { accountIdOf, singleQuery } from '../http/account-params';
import { callerOf, keyCaller, serviceCaller } from '../http/caller';
import type { KeyOwners } from '../keys/key-owners';
import type { AttemptRow, EndpointView } from './webhooks.repository';
import type { WebhooksService } from './webhooks.service';

const view = (e: EndpointView): WebhookObject => ({
  id: e.id,
  url: e.url,
  thresholds: e.thresholds,
  low_credit: e.low_credit === null ? null : toDecimal(toUnits(e.low_credit)),
  enabled: e.enabled,
  created_at: e.created_at.toISOString(),
  updated_at: e.updated_at.toISOString(),
});

const attemptView = (a: AttemptRow): WebhookAttempt => ({
  id: String(a.id),
  alert_id: a.alert_id,
  type: a.type,
  attempt: a.attempt,
  attempted_at: a.attempted_at.toISOString(),
  status_code: a.status_code,
  latency_ms: a.latency_ms,
  error: a.error,
  delivery_status: a.delivery_status,
});

/** The audit actor of a public call: the management key the proxy authenticated, the client's address. */
const keyActor = (req: Request, res: Response): AuditActor => ({
  kind: 'management_key',
  id: callerOf(res).keyId,
  address: forwardedClientAddress(req),
});

/** The audit actor of a dashboard call (service token checked): the signed-in user it names. */
function dashboardActor(req: Request): AuditActor {
  const user = req.headers[ACTOR_USER_HEADER];
  if (!isCanonicalUuid(user))
    throw badRequest(`${ACTOR_USER_HEADER}: the dashboard user acting (a uuid) is required`);
  return { kind: 'user', id: user, address: forwardedClientAddress(req) };
}

/**
 * Webhook endpoints, twice: the public management API `/webhooks…` (management keys, through the
 * proxy) for the caller's account, and `/internal/accounts/{id}/webhooks…` for the dashboard. The
 * same handlers, bodies and answers; only where the account comes from differs.
 */
export function webhooksRoutes(deps: {
  webhooks: WebhooksService;
  verifier: ServiceVerifier;
  owners: KeyOwners;
}): Router {
  const router = Router();
  const mount = (
    prefix: string,
    auth: RequestHandler,
    accountOf: (req: Request, res: Response) => string,
    actorOf: (req: Request, res: Response) => AuditActor,
  ) => {
    const id = (req: Request) => parseInput(webhookParams, req.params).webhookId;
    router.get(prefix, auth, async (req, res) => {
      res.json({ data: (await deps.webhooks.list(accountOf(req, res))).map(view) });
    });
    router.post(prefix, auth, async (req, res) => {
      const accountId = accountOf(req, res);
      const body = parseInput(createWebhookBody, req.body);
      const { endpoint, secret } = await deps.webhooks.create(accountId, body, actorOf(req, res));
      const data: z.input<typeof createdWebhookSchema> = { ...view(endpoint), secret };
      res.status(201).json({ data });
    });
    router.get(`${prefix}/:webhookId`, auth, async (req, res) => {
      res.json({ data: view(await deps.webhooks.get(accountOf(req, res), id(req))) });
    });
    router.patch(`${prefix}/:webhookId`, auth, async (req, res) => {
      const accountId = accountOf(req, res);
      const body = parseInput(updateWebhookBody, req.body);
      res.json({ data: view(await deps.webhooks.update(accountId, id(req), body, actorOf(req, res))) });
    });
    router.delete(`${prefix}/:webhookId`, auth, async (req, res) => {
      const webhookId = id(req);
      await deps.webhooks.remove(accountOf(req, res), webhookId, actorOf(req, res));
      res.json({ data: { id: webhookId, deleted: true } });
    });
    router.post(`${prefix}/:webhookId/test`, auth, async (req, res) => {
      res.json({ data: attemptView(await deps.webhooks.test(accountOf(req, res), id(req))) });
    });
    router.get(`${prefix}/:webhookId/deliveries`, auth, async (req, res) => {
      const accountId = accountOf(req, res);
      const q = parseInput(webhookAttemptsQuery, singleQuery(req));
      res.json({ data: (await deps.webhooks.attempts(accountId, id(req), q.limit)).map(attemptView) });
    });
  };
  mount('/webhooks', keyCaller(deps, 'management'), (_req, res) => callerOf(res).accountId, keyActor);
  mount(
    '/internal/accounts/:accountId/webhooks',
    serviceCaller(deps.verifier, ['dashboard']),
    (req) => accountIdOf(req),
    dashboardActor,
  );
  return router;
}
