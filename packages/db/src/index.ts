import { Kysely, PostgresDialect, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import pg from 'pg';

// numeric stays a string (exact money); int8 as string too. Timestamps come back as Date.
export function createDb<DB>(connectionString: string, options: { max?: number } = {}): Kysely<DB> {
  const pool = new pg.Pool({ connectionString, max: options.max ?? 10 });
  pool.on('error', () => {
    // idle client errors (server restart) are surfaced on the next query instead of crashing
  });
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly migrations: Record<string, Migration>) {}
  async getMigrations() {
    return this.migrations;
  }
}

export interface MigrateResult {
  applied: string[];
}

/**
 * Runs a service's migrations (a static record, names sort in order) inside its own Postgres schema.
 * Safe when several instances start at once: the schema creation retries on the duplicate race and
 * kysely's Migrator serialises the runs with an advisory lock. Throws if a migration failed.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<MigrateResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
      break;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if ((code === '23505' || code === '42P06') && attempt < 5) continue;
      throw err;
    }
  }
  const migrator = new Migrator({
    db,
    provider: new StaticMigrationProvider(migrations),
    migrationTableSchema: schema,
    migrationTableName: 'kysely_migration',
    migrationLockTableName: 'kysely_migration_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}

export { sql };
