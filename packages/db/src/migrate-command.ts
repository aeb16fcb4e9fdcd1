import { createLogger, type LoggerConfig } from '@tollgate/logger';
import type { Migration } from 'kysely/migration';
import { createDb, migrateToLatest } from './index';

export interface MigrateCommand {
  /** The service: its log lines are named `<service>-migrate`. */
  service: string;
  /** Its Postgres schema and its migrations (names sort in order). */
  schema: string;
  migrations: Record<string, Migration>;
  /** The service's loaded config (its DATABASE_URL and log settings). */
  config: { DATABASE_URL: string; LOG_LEVEL?: string; LOG_PRETTY?: boolean };
  /** Where the JSON log lines go (default stdout; tests read them). */
  destination?: LoggerConfig['destination'];
}

/**
 * The migration command of every service with a schema (`src/migrate.ts`: `pnpm --filter
 * @tollgate/<service> migrate`, `make migrate`, `node dist/migrate.js` in a Kubernetes init container):
 * brings the schema to the latest migration on one connection, logs what it applied through the shared
 * logger (JSON: `{"applied": [...]}`), and resolves to the process exit code (1 when a migration failed).
 */
export async function runMigrateCommand(command: MigrateCommand): Promise<number> {
  const { service, schema, migrations, config } = command;
  const logger = createLogger({
    name: `${service}-migrate`,
    level: config.LOG_LEVEL,
    pretty: config.LOG_PRETTY,
    destination: command.destination,
  });
  const db = createDb<unknown>(config.DATABASE_URL, { max: 1 });
  try {
    const { applied } = await migrateToLatest(db, schema, migrations);
    logger.info({ schema, applied }, applied.length ? 'migrations applied' : 'schema already up to date');
    return 0;
  } catch (err) {
    logger.error({ err, schema }, 'migration failed');
    return 1;
  } finally {
    await db.destroy();
  }
}
