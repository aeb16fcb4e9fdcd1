import { runMigrateCommand } from '@tollgate/db';
import { migrations } from '../migrations';
import { loadConfig } from './config';
import { KEYS_SCHEMA } from './database';

// `pnpm --filter @tollgate/keys migrate` (`make migrate`; `node dist/migrate.js` in production): brings the
// `keys` schema to the latest migration (the one runner: @tollgate/db runMigrateCommand).
process.exitCode = await runMigrateCommand({
  service: 'keys',
  schema: KEYS_SCHEMA,
  migrations,
  config: loadConfig(),
});
