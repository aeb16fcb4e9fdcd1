import { onShutdown } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import { serveMetricsFromConfig } from '@tollgate/metrics';
import { loadConfig } from './config';
import { startBilling } from './service';

// Billing: config → logger → (migrate, Postgres, Redis, usage worker, HTTP) → graceful stop.
const config = loadConfig();
const logger = createLogger({ name: 'billing', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const service = await startBilling(config, { logger });
const metricsServer = await serveMetricsFromConfig(config, service.metrics, logger);
onShutdown(logger, async () => {
  await service.close();
  await metricsServer?.close();
});
