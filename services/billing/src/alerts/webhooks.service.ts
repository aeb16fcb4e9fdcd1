import { randomUUID } from 'node:crypto';
import { MAX_WEBHOOK_ENDPOINTS } from '@tollgate/contracts';
import { AppError, badRequest, notFound } from '@tollgate/errors';
import { type AuditActor, recordChange } from '../audit/audit';
import type { BillingDb } from '../database';
import type { AlertDelivery } from './delivery';
import { newSigningSecret, type SecretBox } from './secret-box';
import { DEFAULT_THRESHOLDS } from './thresholds';
import { BlockedAddress, type UrlGuard } from './url-guard';
import {
  deleteEndpoint,
  type EndpointView,
  findEndpoint,
  insertEndpoint,
  insertTestAlert,
  listAttempts,
  listEndpoints,
  updateEndpoint,
} from './webhooks.repository';

const noSuchWebhook = () => notFound('No such webhook');

/** What the audit log keeps of an endpoint: its settings, never the signing secret. */
const snapshot = (e: EndpointView) => ({
  url: e.url,
  thresholds: e.thresholds,
  low_credit: e.low_credit,
  enabled: e.enabled,
});
const target = (id: string) => ({ kind: 'webhook', id });

/** The rules of an account's webhook endpoints (routes: webhooks.routes.ts). */
export function createWebhooksService(deps: {
  db: BillingDb;
  box: SecretBox;
  guard: UrlGuard;
  delivery: AlertDelivery;
  clock: () => Date;
}) {
  /** A URL an endpoint may hold: syntax, scheme, and every address it resolves to public (or allowed). */
  async function checkedUrl(raw: string): Promise<string> {
    const url = deps.guard.parse(raw);
    try {
      await deps.guard.resolve(url);
    } catch (err) {
      if (err instanceof BlockedAddress) throw badRequest(`url: ${err.message}`);
      throw badRequest(`url: ${url.hostname} cannot be resolved`);
    }
    return url.toString();
  }

  return {
    list: (accountId: string) => listEndpoints(deps.db, accountId),

    /** Each change is audited in its transaction (`webhook.create`, `.update`, `.delete`), as `actor`. */
    async create(
      accountId: string,
      body: { url: string; thresholds?: number[]; low_credit?: string | null; enabled?: boolean },
      actor: AuditActor,
    ): Promise<{ endpoint: EndpointView; secret: string }> {
      const url = await checkedUrl(body.url);
      const id = randomUUID();
      const secret = newSigningSecret();
      const endpoint = await deps.db.transaction().execute(async (trx) => {
        const row = await insertEndpoint(
          trx,
          {
            id,
            accountId,
            url,
            thresholds: body.thresholds ?? [...DEFAULT_THRESHOLDS],
            lowCredit: body.low_credit ?? null,
            enabled: body.enabled ?? true,
            sealed: deps.box.seal(secret, id),
          },
          MAX_WEBHOOK_ENDPOINTS,
        );
        if (row)
          await recordChange(trx, actor, {
            accountId,
            action: 'webhook.create',
            target: target(id),
            before: null,
            after: snapshot(row),
          });
        return row;
      });
      if (!endpoint)
        throw new AppError(
          'conflict',
          `An account has at most ${MAX_WEBHOOK_ENDPOINTS} webhooks; delete one first`,
        );
      return { endpoint, secret };
    },

    async get(accountId: string, id: string): Promise<EndpointView> {
      const row = await findEndpoint(deps.db, accountId, id);
      if (!row) throw noSuchWebhook();
      return row;
    },

    async update(
      accountId: string,
      id: string,
      body: { url?: string; thresholds?: number[]; low_credit?: string | null; enabled?: boolean },
      actor: AuditActor,
    ): Promise<EndpointView> {
      const patch = { ...body, ...(body.url === undefined ? {} : { url: await checkedUrl(body.url) }) };
      return deps.db.transaction().execute(async (trx) => {
        const before = await findEndpoint(trx, accountId, id, { lock: true });
        if (!before) throw noSuchWebhook();
        if (Object.keys(patch).length === 0) return before;
        const after = (await updateEndpoint(trx, accountId, id, patch)) as EndpointView;
        // A change that changes nothing is not a change: no entry.
        if (JSON.stringify(snapshot(before)) !== JSON.stringify(snapshot(after)))
          await recordChange(trx, actor, {
            accountId,
            action: 'webhook.update',
            target: target(id),
            before: snapshot(before),
            after: snapshot(after),
          });
        return after;
      });
    },

    async remove(accountId: string, id: string, actor: AuditActor): Promise<void> {
      await deps.db.transaction().execute(async (trx) => {
        const before = await findEndpoint(trx, accountId, id, { lock: true });
        if (!before || !(await deleteEndpoint(trx, accountId, id))) throw noSuchWebhook();
        await recordChange(trx, actor, {
          accountId,
          action: 'webhook.delete',
          target: target(id),
          before: snapshot(before),
          after: null,
        });
      });
    },

    /** Sends a `webhook.test` message now, through the outbox (logged like any delivery). */
    async test(accountId: string, id: string) {
      if (!(await findEndpoint(deps.db, accountId, id))) throw noSuchWebhook();
      const deliveryId = await insertTestAlert(deps.db, accountId, id, deps.clock());
      await deps.delivery.deliverNow(deliveryId);
      const [latest] = await listAttempts(deps.db, accountId, id, 1);
      if (!latest)
        throw new AppError('conflict', 'The test message is being sent by another worker; see the log');
      return latest;
    },

    async attempts(accountId: string, id: string, limit: number) {
      if (!(await findEndpoint(deps.db, accountId, id))) throw noSuchWebhook();
      return listAttempts(deps.db, accountId, id, limit);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
