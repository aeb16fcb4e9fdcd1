import { type Kysely, sql } from 'kysely';

/**
 * Every provider attempt of a request (failover): provider, model, status or error class, latency,
 * in order, the serving one last. `[]` for records written before routing existed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations add column attempts jsonb not null default '[]'::jsonb`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table billing.generations drop column attempts`.execute(db);
}
