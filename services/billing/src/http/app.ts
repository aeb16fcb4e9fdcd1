import type { ServiceVerifier } from '@tollgate/auth';
import type { UsageTopology } from '@tollgate/events';
import { createServiceApp, type ReadinessCheck } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type express from 'express';
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
import { refusalsRoutes } from '../refusals/refusals.routes';
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
  const { db, verifier, owners, clock } = deps;
  const retentionCutoff = deps.retentionCutoff ?? (() => null);
  return createServiceApp({
    service: 'billing',
    logger: deps.logger,
    readiness: deps.readiness,
    metrics: deps.metrics,
    jsonLimit: '256kb',
    routes(app) {
      app.use(generationsRoutes({ db, verifier, owners, retentionCutoff }));
      app.use(creditsRoutes({ credits: deps.credits, verifier, owners }));
      app.use(spendRoutes({ spend: deps.spend, verifier, clock }));
      app.use(analyticsRoutes({ db, verifier, owners, clock }));
      app.use(generationsInternalRoutes({ db, verifier, retentionCutoff }));
      app.use(refusalsRoutes({ db, verifier }));
      app.use(ledgerRoutes({ db, credits: deps.credits, verifier }));
      app.use(billingAuditRoutes({ db, verifier }));
      app.use(webhooksRoutes({ webhooks: deps.webhooks, verifier, owners }));
      if (deps.deadLetters) app.use(deadLetterRoutes({ ...deps.deadLetters, verifier }));
    },
  });
}
