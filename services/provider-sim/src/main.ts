import { createLogger } from '@tollgate/logger';
import { loadConfig } from './config';
import { startProviderSim } from './http/app';

const config = loadConfig();
const logger = createLogger({ name: 'provider-sim', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });

const sim = await startProviderSim({
  port: config.PORT,
  host: config.HOST,
  ttftMs: config.SIM_TTFT_MS,
  interTokenMs: config.SIM_INTER_TOKEN_MS,
  apiKey: config.SIM_API_KEY,
  models: config.SIM_MODELS,
  strict: config.SIM_STRICT,
});
logger.info(
  {
    port: sim.port,
    ttftMs: config.SIM_TTFT_MS,
    interTokenMs: config.SIM_INTER_TOKEN_MS,
    auth: Boolean(config.SIM_API_KEY),
  },
  `provider simulator listening on ${sim.baseUrl}`,
);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down');
  sim.close().then(
    () => process.exit(0),
    (err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));
