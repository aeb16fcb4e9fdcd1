import type { UsageEventV1 } from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import { type ColumnType, type Kysely, sql } from 'kysely';
import type { Database } from '../database';

/**
 * Opt-in bodies (issue 28): `billing.generation_bodies`, the prompt and answer of the requests whose
 * key keeps them — redacted and bounded by the proxy before they were sent, stored with the batch's
 * generation records (same transaction), read only by the dashboard's generation detail, and purged
 * by `created_at` once older than BODIES_RETENTION_DAYS (or the generation records' retention, when
 * shorter).
 */
export interface GenerationBodiesTable {
  id: string;
  account_id: string;
  prompt: string;
  answer: string;
  truncated: boolean;
  created_at: ColumnType<Date, string | Date, never>;
}

type Db = Kysely<Database>;

/** Stores the bodies of the newly inserted records of a batch (a redelivered event adds nothing). */
export async function insertBodies(trx: Db, events: readonly UsageEventV1[], inserted: ReadonlySet<string>) {
  const rows = events.flatMap((e) =>
    e.bodies && inserted.has(e.id)
      ? [
          {
            id: e.id,
            account_id: e.account_id,
            prompt: e.bodies.prompt,
            answer: e.bodies.answer,
            truncated: e.bodies.truncated,
            created_at: e.started_at,
          },
        ]
      : [],
  );
  if (rows.length === 0) return;
  await trx
    .insertInto('billing.generation_bodies')
    .values(rows)
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** The kept bodies of one of the account's generations, or null (none kept, or purged). */
export async function findBodies(db: Db, accountId: string, id: string) {
  const row = await db
    .selectFrom('billing.generation_bodies')
    .select(['prompt', 'answer', 'truncated'])
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row ?? null;
}

const DAY_MS = 86_400_000;
/** Rows deleted per statement (short transactions; the rest in the next statement). */
const PURGE_BATCH = 5_000;

/** Deletes the bodies older than `cutoff`, in batches; returns how many. */
async function purgeBodies(db: Db, cutoff: Date): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      with gone as (
        delete from billing.generation_bodies
         where id in (select id from billing.generation_bodies where created_at < ${cutoff} limit ${PURGE_BATCH})
        returning 1)
      select count(*)::int as n from gone`.execute(db);
    const n = rows[0]?.n ?? 0;
    total += n;
    if (n < PURGE_BATCH) return total;
  }
}

export interface BodiesRetention {
  /** The instant before which bodies are purged. */
  cutoff(): Date;
  /** Purges now, then every `everyMs` (default one hour) until `stop()`. */
  start(everyMs?: number): Promise<void>;
  stop(): void;
}

/** The retention job: bodies live BODIES_RETENTION_DAYS, never longer than their generation records. */
export function createBodiesRetention(
  db: Db,
  options: { retentionDays: number; generationCutoff: () => Date | null; clock: () => Date; logger: Logger },
): BodiesRetention {
  let timer: NodeJS.Timeout | undefined;
  const cutoff = () => {
    const own = new Date(options.clock().getTime() - options.retentionDays * DAY_MS);
    const records = options.generationCutoff();
    return records !== null && records > own ? records : own;
  };
  const run = async () => {
    try {
      const purged = await purgeBodies(db, cutoff());
      if (purged > 0) options.logger.info({ purged }, 'generation bodies past the retention purged');
    } catch (err) {
      options.logger.error({ err }, 'generation bodies purge failed (retried next hour)');
    }
  };
  return {
    cutoff,
    async start(everyMs = 3_600_000) {
      await run();
      timer = setInterval(() => void run(), everyMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
