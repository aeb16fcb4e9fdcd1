import { onShutdown } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import { serveMetricsFromConfig } from '@tollgate/metrics';
import { loadConfig } from './config';
import { startDashboard } from './service';

// Dashboard: config → logger → (migrate, Postgres, HTTP: UI + JSON API) → graceful stop.
const config = loadConfig();
const logger = createLogger({ name: 'dashboard', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
const service = await startDashboard(config, { logger });
const metricsServer = await serveMetricsFromConfig(config, service.metrics, logger);
onShutdown(logger, async () => {
  await service.close();
  await metricsServer?.close();
});
