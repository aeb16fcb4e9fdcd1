import { createLogger } from '@tollgate/logger';
import { loadConfig } from './config';
import { createKeysDb, migrateKeysDb } from './database';

// `pnpm --filter @tollgate/keys migrate`: brings the `keys` schema to the latest migration.
const config = loadConfig();
const logger = createLogger({ name: 'keys-migrate', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const db = createKeysDb(config.DATABASE_URL, { max: 1 });
try {
  const { applied } = await migrateKeysDb(db);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema already up to date');
} catch (err) {
  logger.error({ err }, 'migration failed');
  process.exitCode = 1;
} finally {
  await db.destroy();
}
