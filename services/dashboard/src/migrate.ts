import { loadConfig } from './config';
import { createDashboardDb, migrateDashboardDb } from './database';

// `pnpm --filter @tollgate/dashboard migrate`: applies the dashboard schema's migrations and exits.
const config = loadConfig();
const db = createDashboardDb(config.DATABASE_URL, { max: 1 });
try {
  const { applied } = await migrateDashboardDb(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'dashboard schema is up to date');
} catch (err) {
  console.error('migration failed:', err);
  process.exitCode = 1;
} finally {
  await db.destroy();
}
