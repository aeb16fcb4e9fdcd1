import { type Kysely, sql } from 'kysely';

/**
 * Opt-in bodies (issue 28): the prompt and answer of a request whose key keeps them, beside its
 * generation record (same id), already redacted and bounded by the proxy. Not partitioned: rows are
 * purged by `created_at` (BODIES_RETENTION_DAYS, generations/bodies.ts), in batches, every hour.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table if not exists billing.generation_bodies (
      id text primary key,
      account_id uuid not null,
      prompt text not null,
      answer text not null,
      truncated boolean not null,
      created_at timestamptz not null
    )`.execute(db);
  await sql`create index if not exists generation_bodies_created on billing.generation_bodies (created_at)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists billing.generation_bodies`.execute(db);
}
