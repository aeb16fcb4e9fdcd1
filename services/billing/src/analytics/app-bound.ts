import { sql } from 'kysely';
import type { BillingDb } from '../database';
import { dayOf, type RollupRecord } from './usage-rollup';

/** The app a title rolls up as once its account's day has its share of distinct titles. */
const OTHER_APP = '(other)';

/**
 * Bounds the distinct apps (X-Titles) per account and UTC day in the roll-ups: each title of the
 * records is admitted into `billing.usage_apps` while its account's day holds fewer than `cap`, in
 * one statement; a title not admitted rolls up as `(other)`. Records without a title are left alone.
 * Returns the records to roll up (the same objects where nothing changes). Runs in the batch's
 * transaction; two workers admitting titles of one account's day at once may overshoot the cap by
 * one batch's titles at most.
 */
export async function boundApps<R extends { record: RollupRecord }>(
  trx: BillingDb,
  records: readonly R[],
  cap: number,
): Promise<R[]> {
  const wanted = new Map<string, { account_id: string; day: string; app: string }>();
  for (const { record: r } of records) {
    if (r.app === null || r.app === '' || r.app === OTHER_APP) continue;
    const day = dayOf(r.finished_at);
    wanted.set(`${r.account_id}\u0000${day}\u0000${r.app}`, { account_id: r.account_id, day, app: r.app });
  }
  if (wanted.size === 0) return [...records];
  // Sorted: every worker inserts (and locks) in the same order.
  const list = [...wanted.values()].sort((a, b) =>
    a.account_id !== b.account_id
      ? a.account_id < b.account_id
        ? -1
        : 1
      : a.day !== b.day
        ? a.day < b.day
          ? -1
          : 1
        : a.app < b.app
          ? -1
          : a.app > b.app
            ? 1
            : 0,
  );
  const { rows } = await sql<{ account_id: string; day: string; app: string }>`
    with wanted as (
      select * from json_to_recordset(${JSON.stringify(list)}::json) as r(account_id uuid, day date, app text)
    ), known as (
      select u.account_id, u.day, u.app from billing.usage_apps u
      join wanted w on w.account_id = u.account_id and w.day = u.day and w.app = u.app
    ), counts as (
      select u.account_id, u.day, count(*)::int as n from billing.usage_apps u
      where (u.account_id, u.day) in (select distinct account_id, day from wanted)
      group by 1, 2
    ), fresh as (
      select w.account_id, w.day, w.app,
        row_number() over (partition by w.account_id, w.day order by w.app) as rn
      from wanted w
      where not exists (select 1 from known k where k.account_id = w.account_id and k.day = w.day and k.app = w.app)
    ), admitted as (
      insert into billing.usage_apps (account_id, day, app)
      select f.account_id, f.day, f.app from fresh f
      left join counts c on c.account_id = f.account_id and c.day = f.day
      where coalesce(c.n, 0) + f.rn <= ${cap}
      order by 1, 2, 3
      on conflict do nothing
      returning account_id, day, app
    )
    select account_id::text, day::text, app from known
    union all
    select account_id::text, day::text, app from admitted`.execute(trx);
  const admitted = new Set(rows.map((r) => `${r.account_id}\u0000${r.day}\u0000${r.app}`));
  return records.map((x) => {
    const r = x.record;
    if (r.app === null || r.app === '' || r.app === OTHER_APP) return x;
    if (admitted.has(`${r.account_id}\u0000${dayOf(r.finished_at)}\u0000${r.app}`)) return x;
    return { ...x, record: { ...r, app: OTHER_APP } } as R;
  });
}
