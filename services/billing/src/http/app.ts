import type { ServiceVerifier } from '@tollgate/auth';
import type { UsageTopology } from '@tollgate/events';
import {
  errorHandler,
  healthRoutes,
  jsonBody,
  notFoundHandler,
  type ReadinessCheck,
  requestContext,
} from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { httpMetrics } from '@tollgate/metrics';
import express from 'express';
import type { Registry } from 'prom-client';
import { webhooksRoutes } from '../alerts/webhooks.routes';
import type { WebhooksService } from '../alerts/webhooks.service';
import { analyticsRoutes } from '../analytics/analytics.routes';
import { billingAuditRoutes } from '../audit/audit';
import { creditsRoutes } from '../credits/credits.routes';
import type { CreditsService } from '../credits/credits.service';
import { ledgerRoutes } from '../credits/ledger.routes';
import type { BillingDb } from '../database';
import { deadLetterRoutes } from '../dead-letters/dead-letters.routes';
import { generationsInternalRoutes } from '../generations/generations.internal.routes';
import { generationsRoutes } from '../generations/generations.routes';
import type { KeyOwners } from '../keys/key-owners';
import { spendRoutes } from '../spend/spend.routes';
import type { SpendService } from '../spend/spend.service';

export interface BillingAppDeps {
  db: BillingDb;
  credits: CreditsService;
  spend: SpendService;
  /** Checks the service tokens of internal and caller routes (this service's trusted callers). */
  verifier: ServiceVerifier;
  /** The keys service's answer to who owns a key: caller routes re-read the caller's key. */
  owners: KeyOwners;
  /** Alert webhook endpoints (`/webhooks`, `/internal/accounts/{id}/webhooks`). */
  webhooks: WebhooksService;
  clock: () => Date;
  /** The instant before which generation records are past the retention (null: kept forever). */
  retentionCutoff?: () => Date | null;
  logger: Logger;
  readiness: Record<string, ReadinessCheck>;
  /** The usage dead-letter queue, for `GET /internal/dlq` and `POST /internal/dlq/replay`. */
  deadLetters?: { amqpUrl: string; topology: UsageTopology };
  /** Request metrics are counted into this registry (served on the metrics port by main.ts). */
  metrics?: Registry;
}

/** Billing's express app: health, caller routes (/generation, /credits), internal routes. */
export function createBillingApp(deps: BillingAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  if (deps.metrics) app.use(httpMetrics(deps.metrics, 'tollgate_billing_http'));
  app.use(requestContext(deps.logger, { accessLog: 'debug' }));
  app.use(healthRoutes(deps.readiness));
  app.use(jsonBody('256kb'));
  const retentionCutoff = deps.retentionCutoff ?? (() => null);
  app.use(generationsRoutes({ db: deps.db, verifier: deps.verifier, owners: deps.owners, retentionCutoff }));
  app.use(creditsRoutes({ credits: deps.credits, verifier: deps.verifier, owners: deps.owners }));
  app.use(spendRoutes({ spend: deps.spend, verifier: deps.verifier, clock: deps.clock }));
  app.use(analyticsRoutes({ db: deps.db, verifier: deps.verifier, owners: deps.owners, clock: deps.clock }));
  app.use(generationsInternalRoutes({ db: deps.db, verifier: deps.verifier, retentionCutoff }));
  app.use(ledgerRoutes({ db: deps.db, credits: deps.credits, verifier: deps.verifier }));
  app.use(billingAuditRoutes({ db: deps.db, verifier: deps.verifier }));
  app.use(webhooksRoutes({ webhooks: deps.webhooks, verifier: deps.verifier, owners: deps.owners }));
  if (deps.deadLetters) app.use(deadLetterRoutes({ ...deps.deadLetters, verifier: deps.verifier }));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
