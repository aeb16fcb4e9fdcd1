import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { BillingDb } from '../database';
import type { WebhookEndpoint } from './alerts.table';

/** Endpoint columns shown to owners (never the sealed secret). */
const PUBLIC_COLUMNS = [
  'id',
  'url',
  'thresholds',
  'low_credit',
  'enabled',
  'created_at',
  'updated_at',
] as const;
export type EndpointView = Pick<WebhookEndpoint, (typeof PUBLIC_COLUMNS)[number]>;

export const listEndpoints = (db: BillingDb, accountId: string): Promise<EndpointView[]> =>
  db
    .selectFrom('billing.webhook_endpoints')
    .select(PUBLIC_COLUMNS)
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();

export const findEndpoint = (db: BillingDb, accountId: string, id: string, o: { lock?: boolean } = {}) => {
  const q = db
    .selectFrom('billing.webhook_endpoints')
    .select(PUBLIC_COLUMNS)
    .where('account_id', '=', accountId)
    .where('id', '=', id);
  return (o.lock ? q.forUpdate() : q).executeTakeFirst();
};

/** Inserts an endpoint with the id its secret was sealed for (the id is the ciphertext's bound data). */
export async function insertEndpoint(
  trx: BillingDb,
  row: {
    id: string;
    accountId: string;
    url: string;
    thresholds: number[];
    lowCredit: string | null;
    enabled: boolean;
    sealed: Buffer;
  },
  max: number,
): Promise<EndpointView | null> {
  // Serialises creations of one account, so two at once cannot both pass the count.
  await sql`select pg_advisory_xact_lock(hashtext(${`webhooks:${row.accountId}`}))`.execute(trx);
  const { n } = await trx
    .selectFrom('billing.webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', row.accountId)
    .executeTakeFirstOrThrow();
  if (Number(n) >= max) return null;
  return trx
    .insertInto('billing.webhook_endpoints')
    .values({
      id: row.id,
      account_id: row.accountId,
      url: row.url,
      thresholds: row.thresholds,
      low_credit: row.lowCredit,
      enabled: row.enabled,
      secret_ciphertext: row.sealed,
    })
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirstOrThrow();
}

export const updateEndpoint = (
  db: BillingDb,
  accountId: string,
  id: string,
  patch: { url?: string; thresholds?: number[]; low_credit?: string | null; enabled?: boolean },
) =>
  db
    .updateTable('billing.webhook_endpoints')
    .set({ ...patch, updated_at: sql<Date>`now()` })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirst();

export async function deleteEndpoint(db: BillingDb, accountId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('billing.webhook_endpoints')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** A test alert for one endpoint (its own scope: never a threshold's slot) and its delivery. */
export async function insertTestAlert(db: BillingDb, accountId: string, endpointId: string, at: Date) {
  const id = randomUUID();
  const payload = {
    type: 'webhook.test',
    timestamp: at.toISOString(),
    data: { account_id: accountId, webhook_id: endpointId },
  };
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('billing.alerts')
      .values({
        id,
        account_id: accountId,
        scope: 'test',
        scope_id: endpointId,
        period: id,
        threshold: 'test',
        payload: JSON.stringify(payload),
      })
      .execute();
    const d = await trx
      .insertInto('billing.alert_deliveries')
      // Not due for the poll loop: the request sends it itself (a failure is retried later as usual).
      .values({
        alert_id: id,
        endpoint_id: endpointId,
        account_id: accountId,
        next_attempt_at: sql`now() + interval '1 minute'` as never,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return d.id;
  });
}

export interface AttemptRow {
  id: string;
  alert_id: string;
  type: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  delivery_status: 'pending' | 'delivered' | 'failed';
}

/** The endpoint's delivery log, newest first. */
export const listAttempts = (db: BillingDb, accountId: string, endpointId: string, limit: number) =>
  db
    .selectFrom('billing.alert_delivery_attempts as t')
    .innerJoin('billing.alert_deliveries as d', 'd.id', 't.delivery_id')
    .innerJoin('billing.alerts as a', 'a.id', 'd.alert_id')
    .select([
      't.id',
      'd.alert_id',
      sql<string>`a.payload->>'type'`.as('type'),
      't.attempt',
      't.attempted_at',
      't.status_code',
      't.latency_ms',
      't.error',
      'd.status as delivery_status',
    ])
    .where('t.account_id', '=', accountId)
    .where('t.endpoint_id', '=', endpointId)
    .orderBy('t.id', 'desc')
    .limit(limit)
    .execute() as Promise<AttemptRow[]>;
