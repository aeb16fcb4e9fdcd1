import { onShutdown } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import { loadConfig } from './config';
import { startBilling } from './service';

// Billing: config → logger → (migrate, Postgres, Redis, usage worker, HTTP) → graceful stop.
const config = loadConfig();
const logger = createLogger({ name: 'billing', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const service = await startBilling(config, { logger });
onShutdown(logger, () => service.close());
