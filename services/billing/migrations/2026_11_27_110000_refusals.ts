import { type Kysely, sql } from 'kysely';

/**
 * Refusals as data (issue 28): requests of a known key the proxy answered with an error and billed
 * nothing (its `refusal` events). `billing.refusals` keeps the last ones per key (bounded: billing
 * trims each key to its newest REFUSALS_PER_KEY after every batch) so a refused request's id finds
 * it; the hourly and daily roll-ups count every refusal by key, error type and status class (4 or 5),
 * beside the usage roll-ups (which count the answered requests and their upstream errors).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.refusals (
      id text primary key,
      account_id uuid not null,
      key_id uuid not null,
      api_type text not null,
      model text,
      app text,
      status smallint not null,
      error_type text not null,
      code text not null,
      message text not null,
      created_at timestamptz not null
    )`.execute(db);
  await sql`create index refusals_key_recent on billing.refusals (key_id, created_at desc)`.execute(db);
  await sql`create index refusals_account_recent on billing.refusals (account_id, created_at desc)`.execute(
    db,
  );
  for (const [table, unit] of [
    ['refusals_hourly', 'hour timestamptz'],
    ['refusals_daily', 'day date'],
  ] as const) {
    const column = unit.split(' ')[0] as string;
    await sql`
      create table ${sql.table(`billing.${table}`)} (
        account_id uuid not null,
        ${sql.raw(unit)} not null,
        key_id uuid not null,
        error_type text not null,
        status_class smallint not null,
        refused bigint not null,
        primary key (account_id, ${sql.ref(column)}, key_id, error_type, status_class)
      )`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.refusals_daily`.execute(db);
  await sql`drop table if exists billing.refusals_hourly`.execute(db);
  await sql`drop table if exists billing.refusals`.execute(db);
}
