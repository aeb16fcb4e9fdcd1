import { type Kysely, sql } from 'kysely';

/**
 * The X-Titles (apps) admitted into the roll-ups, per account and UTC day. An X-Title is part of the
 * roll-up keys; unique titles would make the roll-ups as large as the records. Only the first
 * `ANALYTICS_APPS_PER_DAY` distinct titles of an account's day get rows of their own; the rest roll up
 * as the app `(other)` (the generation records keep the real title).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table billing.usage_apps (
      account_id uuid not null,
      day date not null,
      app text not null,
      primary key (account_id, day, app)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.usage_apps`.execute(db);
}
