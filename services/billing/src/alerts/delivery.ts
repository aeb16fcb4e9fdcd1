import type { Logger } from '@tollgate/logger';
import { sql } from 'kysely';
import type { BillingDb } from '../database';
import type { SecretBox } from './secret-box';
import type { AttemptResult, WebhookSender } from './sender';

export interface DeliveryOptions {
  db: BillingDb;
  box: SecretBox;
  sender: WebhookSender;
  logger: Logger;
  /** How often due deliveries are looked for (a full batch is followed at once by the next). */
  pollMs: number;
  /** Deliveries claimed per transaction (sent side by side). */
  batch: number;
  /** Delay after the first failed attempt; doubled after each, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Attempts before a delivery is given up (`failed`). */
  maxAttempts: number;
}

interface Claimed {
  id: string;
  alert_id: string;
  endpoint_id: string;
  account_id: string;
  attempts: number;
  payload: unknown;
  url: string;
  secret_ciphertext: Buffer;
}

/** Delay before attempt `n + 1` after `n` failures: base × 2^(n−1), capped, plus up to 10 % jitter. */
export function backoffMs(failures: number, baseMs: number, maxMs: number, random = Math.random): number {
  const exp = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exp + exp * 0.1 * random());
}

/**
 * Delivers the alert outbox (every billing replica runs one). A run claims due deliveries with
 * `FOR UPDATE SKIP LOCKED` inside a transaction and keeps them locked while it sends them, so two
 * workers never send the same delivery at once, and a worker that dies mid-send releases its rows
 * with its connection (sent again later: receivers deduplicate by `webhook-id`). Each attempt writes
 * a log row (status code, latency, error); a failure schedules the next attempt with exponential
 * backoff, and after `maxAttempts` the delivery is `failed`.
 */
export function createAlertDelivery(o: DeliveryOptions) {
  const log = o.logger.child({ component: 'alert-delivery' });
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;
  let stopped = false;

  async function run(only?: string): Promise<Map<string, AttemptResult>> {
    return o.db.transaction().execute(async (trx) => {
      const { rows } = await sql<Claimed>`
        select d.id::text as id, d.alert_id, d.endpoint_id, d.account_id, d.attempts, a.payload,
          e.url, e.secret_ciphertext
        from billing.alert_deliveries d
        join billing.alerts a on a.id = d.alert_id
        join billing.webhook_endpoints e on e.id = d.endpoint_id
        where d.status = 'pending' and e.enabled
          and ${only === undefined ? sql`d.next_attempt_at <= now()` : sql`d.id = ${only}`}
        order by d.next_attempt_at, d.id
        limit ${only === undefined ? o.batch : 1}
        for update of d skip locked`.execute(trx);
      const results = new Map<string, AttemptResult>();
      await Promise.all(
        rows.map(async (d) => {
          results.set(d.id, await attempt(d));
        }),
      );
      for (const d of rows) await record(trx, d, results.get(d.id) as AttemptResult);
      return results;
    });
  }

  async function attempt(d: Claimed): Promise<AttemptResult> {
    let secret: string;
    try {
      secret = o.box.open(d.secret_ciphertext, d.endpoint_id);
    } catch {
      return {
        statusCode: null,
        latencyMs: 0,
        error: 'signing secret cannot be decrypted (WEBHOOK_SECRET_KEY changed?)',
        delivered: false,
      };
    }
    return o.sender.send({
      id: `msg_${d.alert_id.replaceAll('-', '')}`,
      url: d.url,
      secret,
      body: JSON.stringify(d.payload),
    });
  }

  async function record(trx: BillingDb, d: Claimed, r: AttemptResult) {
    const n = d.attempts + 1;
    await trx
      .insertInto('billing.alert_delivery_attempts')
      .values({
        delivery_id: d.id,
        endpoint_id: d.endpoint_id,
        account_id: d.account_id,
        attempt: n,
        status_code: r.statusCode,
        latency_ms: r.latencyMs,
        error: r.error,
      })
      .execute();
    const status = r.delivered ? 'delivered' : n >= o.maxAttempts ? 'failed' : 'pending';
    const wait = backoffMs(n, o.retryBaseMs, o.retryMaxMs);
    await sql`
      update billing.alert_deliveries set attempts = ${n}, status = ${status},
        delivered_at = ${r.delivered ? sql`now()` : sql`null`},
        next_attempt_at = now() + ${wait} * interval '1 millisecond'
      where id = ${d.id}`.execute(trx);
    if (!r.delivered)
      log.warn(
        { delivery: d.id, endpoint: d.endpoint_id, attempt: n, status, error: r.error },
        'webhook attempt failed',
      );
  }

  const tick = () => {
    if (stopped) return;
    running = run()
      .then((r) => r.size)
      .catch((err: unknown) => {
        log.warn({ err }, 'alert delivery run failed; trying again');
        return 0;
      });
    void running.then((n) => {
      running = null;
      if (stopped) return;
      timer = setTimeout(tick, n >= o.batch ? 0 : o.pollMs);
      timer.unref();
    });
  };

  return {
    start() {
      stopped = false;
      tick();
    },
    /** One delivery now (the "send test" button): its attempt, or null when another worker holds it. */
    async deliverNow(deliveryId: string): Promise<AttemptResult | null> {
      return (await run(deliveryId)).get(deliveryId) ?? null;
    },
    async close() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export type AlertDelivery = ReturnType<typeof createAlertDelivery>;
