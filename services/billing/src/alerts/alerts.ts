import type { Logger } from '@tollgate/logger';
import type { BillingConfig } from '../config';
import type { BillingDb } from '../database';
import type { KeyOwners } from '../keys/key-owners';
import { webhookSecretKey } from './alerts.config';
import { type AlertDelivery, createAlertDelivery } from './delivery';
import { createDeliveryLogRetention } from './retention';
import { createSecretBox } from './secret-box';
import { createWebhookSender } from './sender';
import { createThresholdHook, type KeyLimit, type ThresholdHook } from './threshold-hook';
import { createUrlGuard } from './url-guard';
import { createWebhooksService, type WebhooksService } from './webhooks.service';

export interface Alerts {
  /** Decides alerts in the usage recorder's commit. */
  hook: ThresholdHook;
  /** Delivers the outbox (started with the usage worker). */
  delivery: AlertDelivery;
  /** Removes the delivery log past WEBHOOK_LOG_RETENTION_DAYS (started with the usage worker). */
  retention: ReturnType<typeof createDeliveryLogRetention>;
  webhooks: WebhooksService;
  close(): Promise<void>;
}

/** Billing's alerts: threshold decisions at commit, the outbox's delivery, the endpoints' rules. */
export function createAlerts(deps: {
  config: BillingConfig;
  db: BillingDb;
  owners: KeyOwners;
  logger: Logger;
  clock: () => Date;
}): Alerts {
  const { config } = deps;
  const box = createSecretBox(webhookSecretKey(config));
  const guard = createUrlGuard({ allowedCidrs: config.WEBHOOK_ALLOWED_CIDRS });
  const sender = createWebhookSender({ guard, timeoutMs: config.WEBHOOK_TIMEOUT_MS });
  const delivery = createAlertDelivery({
    db: deps.db,
    box,
    sender,
    logger: deps.logger,
    pollMs: config.WEBHOOK_POLL_MS,
    batch: 10,
    retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
    retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
  });
  const hook = createThresholdHook({
    clock: deps.clock,
    keyLimits: async (ids) => {
      const out = new Map<string, KeyLimit>();
      if (ids.length === 0) return out;
      for (const k of await deps.owners.current(ids))
        out.set(k.id, {
          limit: k.limit ?? null,
          limitReset: k.limitReset ?? null,
          teamId: k.teamId ?? null,
          teamLimit: k.teamLimit ?? null,
          teamLimitReset: k.teamLimitReset ?? null,
        });
      return out;
    },
  });
  const webhooks = createWebhooksService({ db: deps.db, box, guard, delivery, clock: deps.clock });
  const retention = createDeliveryLogRetention(deps.db, {
    retentionDays: config.WEBHOOK_LOG_RETENTION_DAYS,
    clock: deps.clock,
    logger: deps.logger,
  });
  return {
    hook,
    delivery,
    retention,
    webhooks,
    async close() {
      retention.stop();
      await delivery.close();
      await sender.close();
    },
  };
}
