import type { Logger } from '@tollgate/logger';
import { type Kysely, sql } from 'kysely';

/**
 * `billing.generations` is partitioned by month of `created_at` (native range partitioning): one
 * table per UTC month, `billing.generations_pYYYY_MM`. Partitions are created ahead of time by
 * `maintain()` (at start and every hour) and, for a month nobody created yet (a record from an
 * earlier month, a test clock), on demand before a batch is inserted. With a retention
 * (`GENERATION_RETENTION_DAYS`) whole partitions are dropped once every record in them is older
 * than the retention: a month is kept until its last day is past the retention, so a record lives
 * between `retentionDays` and `retentionDays` + one month. The roll-ups (`usage_hourly`,
 * `usage_daily`), spend totals and credits are other tables and are never dropped.
 */

const PARENT = 'generations';
const SCHEMA = 'billing';
const NAME = /^generations_p(\d{4})_(\d{2})$/;
/** One lock for every replica's partition DDL (create if missing, drop expired). */
const LOCK_KEY = 'tollgate.billing.generations.partitions';

/** The first instant (UTC) of the month of `at`. */
export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** The first instant of the month `n` months after the month starting at `month`. */
export function addMonths(month: Date, n: number): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + n, 1));
}

/** `generations_p2026_11` for November 2026. */
export function partitionName(month: Date): string {
  return `${PARENT}_p${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The month a partition's name stands for, or null for a table that is not one of ours. */
export function monthOfPartition(name: string): Date | null {
  const m = NAME.exec(name);
  if (!m) return null;
  const month = Number(m[2]);
  if (month < 1 || month > 12) return null;
  return new Date(Date.UTC(Number(m[1]), month - 1, 1));
}

/** Creates the month's partition unless it exists (the caller holds the lock or runs alone). */
export async function createMonthPartition<D>(db: Kysely<D>, month: Date): Promise<boolean> {
  const name = partitionName(month);
  const { rows } = await sql<{ exists: boolean }>`
    select to_regclass(${`${SCHEMA}.${name}`}) is not null as exists`.execute(db);
  if (rows[0]?.exists) return false;
  await sql`create table ${sql.table(`${SCHEMA}.${name}`)} partition of ${sql.table(`${SCHEMA}.${PARENT}`)}
    for values from (${sql.lit(month.toISOString())}) to (${sql.lit(addMonths(month, 1).toISOString())})`.execute(
    db,
  );
  return true;
}

/** The monthly partitions that exist now, oldest first. */
export async function listPartitions<D>(db: Kysely<D>): Promise<{ name: string; month: Date }[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name
      from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      join pg_class p on p.oid = i.inhparent
      join pg_namespace n on n.oid = p.relnamespace
     where n.nspname = ${SCHEMA} and p.relname = ${PARENT}`.execute(db);
  return rows
    .flatMap((r) => {
      const month = monthOfPartition(r.name);
      return month ? [{ name: r.name, month }] : [];
    })
    .sort((a, b) => a.month.getTime() - b.month.getTime());
}

export interface PartitionOptions {
  /** Months created ahead of the current one (default 3). */
  aheadMonths?: number;
  /** Records older than this many days may be dropped (whole months); undefined keeps everything. */
  retentionDays?: number;
  clock?: () => Date;
  logger?: Logger;
}

export interface GenerationPartitions {
  /**
   * Makes sure every month of these `created_at` values has a partition, creating the missing ones
   * (never one wholly past the retention: such a record is refused by the insert, and its event
   * dead-lettered). A map lookup per batch when they exist.
   */
  ensureFor(createdAt: readonly string[]): Promise<void>;
  /** Creates the months ahead and drops the months past the retention; says what it did. */
  maintain(): Promise<{ created: string[]; dropped: string[] }>;
  /** The instant before which records are past the retention (null: kept forever). */
  cutoff(): Date | null;
  /** Runs `maintain()` now and every `everyMs` (default one hour) until `stop()`. */
  start(everyMs?: number): Promise<void>;
  stop(): void;
}

const DAY_MS = 86_400_000;

export function createGenerationPartitions<D>(
  db: Kysely<D>,
  options: PartitionOptions = {},
): GenerationPartitions {
  const clock = options.clock ?? (() => new Date());
  const ahead = options.aheadMonths ?? 3;
  const known = new Set<number>();
  let timer: NodeJS.Timeout | undefined;

  const cutoff = () =>
    options.retentionDays === undefined ? null : new Date(clock().getTime() - options.retentionDays * DAY_MS);
  /** A month is wholly past the retention when its end is at or before the cutoff. */
  const expired = (month: Date, at: Date | null) =>
    at !== null && addMonths(month, 1).getTime() <= at.getTime();

  /** Runs `work` in a transaction holding the replicas' partition lock. */
  const locked = <T>(work: (trx: Kysely<D>) => Promise<T>) =>
    db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${LOCK_KEY}))`.execute(trx);
      return work(trx);
    });

  async function ensureFor(createdAt: readonly string[]): Promise<void> {
    let missing: Date[] | undefined;
    for (const at of createdAt) {
      const month = monthStart(new Date(at));
      const t = month.getTime();
      if (Number.isNaN(t) || known.has(t)) continue;
      if (!missing) missing = [];
      if (!missing.some((m) => m.getTime() === t)) missing.push(month);
    }
    if (!missing) return;
    const at = cutoff();
    const creatable = missing.filter((m) => !expired(m, at));
    if (creatable.length > 0) {
      await locked(async (trx) => {
        for (const month of creatable) await createMonthPartition(trx, month);
      });
    }
    for (const m of creatable) known.add(m.getTime());
  }

  async function maintain(): Promise<{ created: string[]; dropped: string[] }> {
    const current = monthStart(clock());
    const at = cutoff();
    return locked(async (trx) => {
      const created: string[] = [];
      for (let i = 0; i <= ahead; i++) {
        const month = addMonths(current, i);
        if (await createMonthPartition(trx, month)) created.push(partitionName(month));
        known.add(month.getTime());
      }
      const dropped: string[] = [];
      for (const p of await listPartitions(trx)) {
        if (!expired(p.month, at)) continue;
        await sql`drop table ${sql.table(`${SCHEMA}.${p.name}`)}`.execute(trx);
        known.delete(p.month.getTime());
        dropped.push(p.name);
      }
      return { created, dropped };
    });
  }

  async function runMaintenance(): Promise<void> {
    try {
      const { created, dropped } = await maintain();
      if (created.length || dropped.length) {
        options.logger?.info({ created, dropped }, 'generation partitions maintained');
      }
    } catch (err) {
      options.logger?.error({ err }, 'generation partition maintenance failed (retried next hour)');
    }
  }

  return {
    ensureFor,
    maintain,
    cutoff,
    async start(everyMs = 3_600_000) {
      await runMaintenance();
      timer = setInterval(() => void runMaintenance(), everyMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

/** The unix second a request id (`gen-<seconds>-…`) was minted at, or null. */
export function requestIdSecond(id: string): number | null {
  const m = /^gen-(\d{1,12})-/.exec(id);
  return m ? Number(m[1]) : null;
}
