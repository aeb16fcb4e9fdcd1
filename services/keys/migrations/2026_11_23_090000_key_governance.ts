import { type Kysely, sql } from 'kysely';

/**
 * Key governance: an expiry instant, OpenRouter's include_byok_in_limit flag (stored; no BYOK yet),
 * a model allow-list (ids or `vendor/*`; empty = all) and a requests-per-minute limit (null = none).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.api_keys
      add column if not exists expires_at timestamptz,
      add column if not exists include_byok_in_limit boolean not null default false,
      add column if not exists allowed_models text[] not null default '{}',
      add column if not exists rate_limit_rpm integer check (rate_limit_rpm > 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table keys.api_keys
      drop column if exists expires_at,
      drop column if exists include_byok_in_limit,
      drop column if exists allowed_models,
      drop column if exists rate_limit_rpm`.execute(db);
}
