import { runMigrateCommand } from '@tollgate/db';
import { migrations } from '../migrations';
import { loadConfig } from './config';
import { BILLING_SCHEMA } from './database';

// `pnpm --filter @tollgate/billing migrate` (`make migrate`; `node dist/migrate.js` in production): brings the
// `billing` schema to the latest migration (the one runner: @tollgate/db runMigrateCommand).
process.exitCode = await runMigrateCommand({
  service: 'billing',
  schema: BILLING_SCHEMA,
  migrations,
  config: loadConfig(),
});
