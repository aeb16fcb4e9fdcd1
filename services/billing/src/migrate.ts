import { createLogger } from '@tollgate/logger';
import { loadConfig } from './config';
import { createBillingDb, migrateBillingDb } from './database';

// `pnpm --filter @tollgate/billing migrate`: brings the `billing` schema to the latest migration.
const config = loadConfig();
const logger = createLogger({ name: 'billing-migrate', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const db = createBillingDb(config.DATABASE_URL, { max: 1 });
try {
  const { applied } = await migrateBillingDb(db);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema already up to date');
} catch (err) {
  logger.error({ err }, 'migration failed');
  process.exitCode = 1;
} finally {
  await db.destroy();
}
