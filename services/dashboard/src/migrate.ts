import { runMigrateCommand } from '@tollgate/db';
import { migrations } from '../migrations';
import { loadConfig } from './config';
import { DASHBOARD_SCHEMA } from './database';

// `pnpm --filter @tollgate/dashboard migrate` (`make migrate`; `node dist/migrate.js` in production): brings the
// `dashboard` schema to the latest migration (the one runner: @tollgate/db runMigrateCommand).
process.exitCode = await runMigrateCommand({
  service: 'dashboard',
  schema: DASHBOARD_SCHEMA,
  migrations,
  config: loadConfig(),
});
