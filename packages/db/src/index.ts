import { Kysely, PostgresDialect, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import pg from 'pg';
import { namePreparedStatements } from './prepared';

/** The connection string each db was created with, so migrations can create a missing database. */
const connectionStrings = new WeakMap<object, string>();

// numeric stays a string (exact money); int8 as string too. Timestamps come back as Date.
export function createDb<DB>(connectionString: string, options: { max?: number } = {}): Kysely<DB> {
  const pool = new pg.Pool({ connectionString, max: options.max ?? 10 });
  pool.on('error', () => {
    // idle client errors (server restart) are surfaced on the next query instead of crashing
  });
  // A client checked out of the pool (e.g. inside a transaction, between two queries) whose socket
  // dies emits 'error' with no pool listener attached: without this the process crashed with
  // "Connection terminated unexpectedly" when Postgres went away. The failure reaches the caller as
  // the rejection of its next query, and the pool discards the broken client on release.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    namePreparedStatements(client);
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  connectionStrings.set(db, connectionString);
  return db;
}

/**
 * Creates the database named in `connectionString` if it does not exist (connecting to the server's
 * `postgres` database), so a service started alone on a fresh server works. Safe when raced.
 */
export async function ensureDatabase(connectionString: string): Promise<boolean> {
  const target = new URL(connectionString);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name) return false;
  const admin = new URL(connectionString);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount) return false;
    await client.query(`create database "${name.replaceAll('"', '""')}"`);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === '42P04' || code === '23505') return false; // created concurrently
    throw err;
  } finally {
    await client.end();
  }
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
 * Creates the database first if it is missing. Safe when several instances start at once: the schema creation retries on the duplicate race and
 * kysely's Migrator serialises the runs with an advisory lock. Throws if a migration failed.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  schema: string,
  migrations: Record<string, Migration>,
): Promise<MigrateResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      // Only when missing: a service's own role (docs/operations.md "Security") owns its schema but
      // may not create schemas, and CREATE SCHEMA checks that right even with IF NOT EXISTS.
      const exists = await sql<{
        one: number;
      }>`select 1 as one from pg_namespace where nspname = ${schema}`.execute(db);
      if (exists.rows.length === 0) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
      break;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if ((code === '23505' || code === '42P06') && attempt < 5) continue;
      // 3D000: the database itself is missing (fresh server): create it once, then retry.
      const url = connectionStrings.get(db);
      if (code === '3D000' && url && attempt === 0) {
        await ensureDatabase(url);
        continue;
      }
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

export {
  type AuditActor,
  type AuditActorKind,
  type AuditChange,
  type AuditLogEntry,
  type AuditLogFilters,
  type AuditLogTable,
  appendAuditEntry,
  createAuditLog,
  dropAuditLog,
  listAuditLog,
} from './audit-log';
export { type MigrateCommand, runMigrateCommand } from './migrate-command';
export { prepared } from './prepared';
export { sql };
