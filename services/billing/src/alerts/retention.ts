import type { Logger } from '@tollgate/logger';
import { sql } from 'kysely';
import type { BillingDb } from '../database';

const DAY_MS = 86_400_000;

/**
 * Removes the delivery log older than `cutoff`: every finished delivery (`delivered` or `failed`)
 * created before it, with its attempts (the foreign key cascades), and test messages (`webhook.test`,
 * scope `test`) left without a delivery. Pending deliveries stay whatever their age (they are still
 * being tried), and so does every threshold alert: its row is the once-per-period decision (one row
 * per crossing), whose removal could let a late event of that period alert again.
 */
export async function pruneDeliveryLog(
  db: BillingDb,
  cutoff: Date,
): Promise<{ deliveries: number; tests: number }> {
  return db.transaction().execute(async (trx) => {
    const deliveries = await sql`
      delete from billing.alert_deliveries
      where status <> 'pending' and created_at < ${cutoff}`.execute(trx);
    const tests = await sql`
      delete from billing.alerts a
      where a.scope = 'test' and a.created_at < ${cutoff}
        and not exists (select 1 from billing.alert_deliveries d where d.alert_id = a.id)`.execute(trx);
    return { deliveries: Number(deliveries.numAffectedRows ?? 0), tests: Number(tests.numAffectedRows ?? 0) };
  });
}

/** Runs `pruneDeliveryLog` now and then every hour (WEBHOOK_LOG_RETENTION_DAYS). */
export function createDeliveryLogRetention(
  db: BillingDb,
  options: { retentionDays: number; clock: () => Date; logger: Logger },
) {
  let timer: NodeJS.Timeout | undefined;
  const run = async () => {
    try {
      const cutoff = new Date(options.clock().getTime() - options.retentionDays * DAY_MS);
      const pruned = await pruneDeliveryLog(db, cutoff);
      if (pruned.deliveries + pruned.tests > 0)
        options.logger.info(pruned, 'alert delivery log past WEBHOOK_LOG_RETENTION_DAYS removed');
    } catch (err) {
      options.logger.error({ err }, 'alert delivery log retention failed (retried next hour)');
    }
  };
  return {
    start(everyMs = 3_600_000) {
      void run();
      timer = setInterval(() => void run(), everyMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
