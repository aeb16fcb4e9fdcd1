import type { RefusalEventV1, RefusalType } from '@tollgate/events';
import { sql } from 'kysely';
import type { BillingDb } from '../database';

/** The last refusals kept per key (older ones are trimmed after each batch; the roll-ups count all). */
export const REFUSALS_PER_KEY = 50;

const HOUR_MS = 3_600_000;
const hourOf = (iso: string) => new Date(Math.floor(Date.parse(iso) / HOUR_MS) * HOUR_MS).toISOString();

/** One roll-up increment: (unit, key, error type, status class) → refusals. */
function increments(events: readonly RefusalEventV1[], unitOf: (iso: string) => string) {
  const sums = new Map<
    string,
    {
      account_id: string;
      unit: string;
      key_id: string;
      error_type: string;
      status_class: number;
      refused: number;
    }
  >();
  for (const e of events) {
    const unit = unitOf(e.finished_at);
    const statusClass = Math.floor(e.status / 100);
    const k = `${e.account_id}|${unit}|${e.key_id}|${e.error_type}|${statusClass}`;
    const row = sums.get(k);
    if (row) row.refused++;
    else
      sums.set(k, {
        account_id: e.account_id,
        unit,
        key_id: e.key_id,
        error_type: e.error_type,
        status_class: statusClass,
        refused: 1,
      });
  }
  return [...sums.values()];
}

/**
 * Records a batch of refusal events exactly once, in one transaction: the records (`on conflict do
 * nothing`), the hourly and daily roll-ups of the newly inserted ones only, then every key of the
 * batch trimmed to its newest REFUSALS_PER_KEY records. Returns how many were new.
 */
export async function recordRefusals(db: BillingDb, events: readonly RefusalEventV1[]): Promise<number> {
  if (events.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    const rows = events.map((e) => ({
      id: e.id,
      account_id: e.account_id,
      key_id: e.key_id,
      api_type: e.api_type,
      model: e.model,
      app: e.app,
      status: e.status,
      error_type: e.error_type,
      code: e.code,
      message: e.message,
      created_at: e.finished_at,
    }));
    const inserted = await sql<{ id: string }>`
      insert into billing.refusals
        (id, account_id, key_id, api_type, model, app, status, error_type, code, message, created_at)
      select id, account_id, key_id, api_type, model, app, status, error_type, code, message, created_at
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(
        id text, account_id uuid, key_id uuid, api_type text, model text, app text, status smallint,
        error_type text, code text, message text, created_at timestamptz)
      on conflict (id) do nothing
      returning id`.execute(trx);
    const fresh = new Set(inserted.rows.map((r) => r.id));
    const added = events.filter((e) => fresh.has(e.id));
    if (added.length > 0) {
      const hourly = JSON.stringify(increments(added, hourOf));
      const daily = JSON.stringify(increments(added, (iso) => iso.slice(0, 10)));
      await sql`
        with h as (
          insert into billing.refusals_hourly as t (account_id, hour, key_id, error_type, status_class, refused)
          select account_id, unit::timestamptz, key_id, error_type, status_class, refused
          from jsonb_to_recordset(${hourly}::jsonb) as r(account_id uuid, unit text, key_id uuid,
            error_type text, status_class smallint, refused bigint)
          on conflict (account_id, hour, key_id, error_type, status_class)
          do update set refused = t.refused + excluded.refused
        )
        insert into billing.refusals_daily as t (account_id, day, key_id, error_type, status_class, refused)
        select account_id, unit::date, key_id, error_type, status_class, refused
        from jsonb_to_recordset(${daily}::jsonb) as r(account_id uuid, unit text, key_id uuid,
          error_type text, status_class smallint, refused bigint)
        on conflict (account_id, day, key_id, error_type, status_class)
        do update set refused = t.refused + excluded.refused`.execute(trx);
    }
    const keys = [...new Set(events.map((e) => e.key_id))];
    await sql`
      delete from billing.refusals d using (
        select id from (
          select id, row_number() over (partition by key_id order by created_at desc, id desc) as n
          from billing.refusals where key_id = any(${keys}::uuid[])
        ) ranked where n > ${REFUSALS_PER_KEY}
      ) old
      where d.id = old.id`.execute(trx);
    return added.length;
  });
}

export interface RefusalRecord {
  id: string;
  key_id: string;
  api_type: string;
  model: string | null;
  app: string | null;
  status: number;
  error_type: RefusalType;
  code: string;
  message: string;
  created_at: Date;
}

const RECORD_COLUMNS = sql`id, key_id, api_type, model, app, status, error_type, code, message, created_at`;

/** The newest refusals of an account (or one of its keys), newest first. */
export async function recentRefusals(
  db: BillingDb,
  q: { accountId: string; keyId?: string; limit: number },
): Promise<RefusalRecord[]> {
  const byKey = q.keyId === undefined ? sql`` : sql`and key_id = ${q.keyId}`;
  const r = await sql<RefusalRecord>`
    select ${RECORD_COLUMNS} from billing.refusals
    where account_id = ${q.accountId} ${byKey}
    order by created_at desc, id desc limit ${q.limit}`.execute(db);
  return r.rows;
}

/** One refusal of the account by its request id, or null (never recorded, or trimmed). */
export async function refusalById(
  db: BillingDb,
  accountId: string,
  id: string,
): Promise<RefusalRecord | null> {
  const r = await sql<RefusalRecord>`
    select ${RECORD_COLUMNS} from billing.refusals where id = ${id} and account_id = ${accountId}`.execute(
    db,
  );
  return r.rows[0] ?? null;
}

export interface ErrorsRow {
  bucket: Date | null;
  group: string | null;
  requests: string;
  errors: string;
}
export interface RefusedRow {
  bucket: Date | null;
  group: string | null;
  error_type: RefusalType;
  status_class: number;
  refused: string;
}

export interface ErrorsQuery {
  accountId: string;
  from: Date;
  to: Date;
  granularity: 'hour' | 'day' | 'total';
  groupBy: 'key' | 'none';
  keyId?: string;
}

/**
 * The answered requests (and those that ended with an upstream error) from the latency roll-ups
 * (the usage roll-ups' counts without the per-app split: a quarter of the rows or fewer), and
 * the refusals by error type and status class from the refusal roll-ups, per bucket and group. Day
 * and whole-range queries over whole days read the daily tables.
 */
export async function queryErrors(
  db: BillingDb,
  q: ErrorsQuery,
): Promise<{ answered: ErrorsRow[]; refused: RefusedRow[] }> {
  const daily =
    q.granularity === 'day' ||
    (q.granularity === 'total' && q.from.getTime() % 86_400_000 === 0 && q.to.getTime() % 86_400_000 === 0);
  const unit = daily ? sql.raw('day') : sql.raw('hour');
  const suffix = daily ? 'daily' : 'hourly';
  const from = daily ? q.from.toISOString().slice(0, 10) : q.from.toISOString();
  const to = daily ? q.to.toISOString().slice(0, 10) : q.to.toISOString();
  const bucket =
    q.granularity === 'total' ? sql`null::timestamptz` : daily ? sql`day::timestamptz` : sql`hour`;
  const group = q.groupBy === 'key' ? sql`key_id::text` : sql`null::text`;
  const byKey = q.keyId === undefined ? sql`` : sql`and key_id = ${q.keyId}`;
  // Hours of the whole account: one row per hour (usage_account_hourly); else the latency roll-ups.
  const answeredTable =
    !daily && q.groupBy === 'none' && q.keyId === undefined
      ? sql.table('billing.usage_account_hourly')
      : sql.table(`billing.latency_${suffix}`);
  const where = sql`account_id = ${q.accountId} and ${unit} >= ${from} and ${unit} < ${to} ${byKey}`;
  const [answered, refused] = await Promise.all([
    sql<ErrorsRow>`
      select ${bucket} as bucket, ${group} as group, sum(requests) as requests, sum(errors) as errors
      from ${answeredTable} where ${where}
      group by 1, 2 order by 1, 2`.execute(db),
    sql<RefusedRow>`
      select ${bucket} as bucket, ${group} as group, error_type, status_class, sum(refused) as refused
      from ${sql.table(`billing.refusals_${suffix}`)} where ${where}
      group by 1, 2, 3, 4 order by 1, 2`.execute(db),
  ]);
  return { answered: answered.rows, refused: refused.rows };
}
