import { type RawBuilder, sql } from 'kysely';
import type { DashboardDb } from '../database';

/** The rules of one reservation (see `reserveAttempt`). */
export interface ReserveRule {
  now: Date;
  /** Failures before this instant belong to an old window (the count starts again). */
  since: Date;
  /** Failures allowed in a window before backoff starts. */
  freeAttempts: number;
  backoffBaseMs: number;
  /** Longest backoff. */
  backoffMaxMs: number;
}

/**
 * Counts one attempt of `subject` as a failure before its password is checked, unless the subject is
 * in backoff: then nothing is written and null is returned. One statement, so parallel guesses each
 * see the others' counts. From the `freeAttempts`-th failure of a window on, the subject may not try
 * again for `backoffBaseMs` × 2^(failures − freeAttempts), at most `backoffMaxMs`.
 */
export async function reserveAttempt(
  db: DashboardDb,
  subject: string,
  r: ReserveRule,
): Promise<{ failures: number } | null> {
  const t = sql.table('dashboard.sign_in_failures');
  const stale = sql<boolean>`${t}.window_started_at <= ${r.since}`;
  const failures = sql<number>`(case when ${stale} then 1 else ${t}.failures + 1 end)`;
  const blockedUntil = (n: RawBuilder<number>) => sql<Date | null>`case when ${n} >= ${r.freeAttempts}
    then ${r.now}::timestamptz + least(${r.backoffMaxMs}::float8,
      ${r.backoffBaseMs}::float8 * power(2, least(${n} - ${r.freeAttempts}, 40))) * interval '1 millisecond'
    else null end`;
  const first = sql<number>`1`;
  const { rows } = await sql<{ failures: number }>`
    insert into dashboard.sign_in_failures (subject, failures, window_started_at, blocked_until)
    values (${subject}, 1, ${r.now}, ${blockedUntil(first)})
    on conflict (subject) do update set
      failures = ${failures},
      window_started_at = case when ${stale} then ${r.now} else ${t}.window_started_at end,
      blocked_until = ${blockedUntil(failures)}
    where ${t}.blocked_until is null or ${t}.blocked_until <= ${r.now}
    returning failures`.execute(db);
  return rows[0] ?? null;
}

/** When `subject` may try again (null: now). */
export async function blockedUntil(db: DashboardDb, subject: string): Promise<Date | null> {
  const row = await db
    .selectFrom('dashboard.sign_in_failures')
    .select('blocked_until')
    .where('subject', '=', subject)
    .executeTakeFirst();
  return row?.blocked_until ?? null;
}

/**
 * Takes back one counted attempt of `subject` (it succeeded, or was refused for another subject);
 * lifts the backoff it may have started.
 */
export async function takeBackAttempt(db: DashboardDb, subject: string, freeAttempts: number) {
  await db
    .updateTable('dashboard.sign_in_failures')
    .set({
      failures: sql`greatest(failures - 1, 0)`,
      blocked_until: sql`case when failures - 1 >= ${freeAttempts} then blocked_until else null end`,
    })
    .where('subject', '=', subject)
    .execute();
}

export async function clearSubject(db: DashboardDb, subject: string) {
  await db.deleteFrom('dashboard.sign_in_failures').where('subject', '=', subject).execute();
}

/** Deletes the rows whose window ended and whose backoff is over (they would start afresh anyway). */
export async function sweepAttempts(db: DashboardDb, now: Date, since: Date): Promise<number> {
  const r = await db
    .deleteFrom('dashboard.sign_in_failures')
    .where('window_started_at', '<=', since)
    .where((eb) => eb.or([eb('blocked_until', 'is', null), eb('blocked_until', '<=', now)]))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
