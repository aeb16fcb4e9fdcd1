import { onShutdown } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import { serveMetricsFromConfig } from '@tollgate/metrics';
import { loadConfig } from './config';
import { startKeysService } from './service';

// Keys service: config → logger → (migrate, Postgres, Redis, last_used flusher, HTTP) → graceful stop.
const config = loadConfig();
const logger = createLogger({ name: 'keys', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
try {
  const service = await startKeysService(config, { logger });
  const metricsServer = await serveMetricsFromConfig(config, service.metrics, logger);
  onShutdown(logger, async () => {
    await service.close();
    await metricsServer?.close();
  });
} catch (err) {
  logger.fatal({ err }, 'keys service failed to start');
  process.exit(1);
}
