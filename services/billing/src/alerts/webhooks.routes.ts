import type { ServiceVerifier } from '@tollgate/auth';
import {
  type createdWebhookSchema,
  createWebhookBody,
  updateWebhookBody,
  type WebhookAttempt,
  type WebhookObject,
  webhookAttemptsQuery,
  webhookParams,
} from '@tollgate/contracts';
import { parseInput } from '@tollgate/http';
import { toDecimal, toUnits } from '@tollgate/money';
import { type Request, type RequestHandler, type Response, Router } from 'express';
import type { z } from 'zod';
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
  ) => {
    const id = (req: Request) => parseInput(webhookParams, req.params).webhookId;
    router.get(prefix, auth, async (req, res) => {
      res.json({ data: (await deps.webhooks.list(accountOf(req, res))).map(view) });
    });
    router.post(prefix, auth, async (req, res) => {
      const accountId = accountOf(req, res);
      const body = parseInput(createWebhookBody, req.body);
      const { endpoint, secret } = await deps.webhooks.create(accountId, body);
      const data: z.input<typeof createdWebhookSchema> = { ...view(endpoint), secret };
      res.status(201).json({ data });
    });
    router.get(`${prefix}/:webhookId`, auth, async (req, res) => {
      res.json({ data: view(await deps.webhooks.update(accountOf(req, res), id(req), {})) });
    });
    router.patch(`${prefix}/:webhookId`, auth, async (req, res) => {
      const accountId = accountOf(req, res);
      const body = parseInput(updateWebhookBody, req.body);
      res.json({ data: view(await deps.webhooks.update(accountId, id(req), body)) });
    });
    router.delete(`${prefix}/:webhookId`, auth, async (req, res) => {
      const webhookId = id(req);
      await deps.webhooks.remove(accountOf(req, res), webhookId);
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
  mount('/webhooks', keyCaller(deps, 'management'), (_req, res) => callerOf(res).accountId);
  mount('/internal/accounts/:accountId/webhooks', serviceCaller(deps.verifier, ['dashboard']), (req) =>
    accountIdOf(req),
  );
  return router;
}
