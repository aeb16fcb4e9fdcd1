import cluster from 'node:cluster';
import { onShutdown } from '@tollgate/http/shutdown';
import { createLogger } from '@tollgate/logger';
import { exposeToClusterPrimary, serveMetricsFromConfig } from '@tollgate/metrics';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadConfig } from './config';
import { processSettings } from './runtime';

// Table of contents: config → logger → (cluster primary forks workers and serves the workers' metrics)
// → proxy + metrics listener → SIGTERM drain.
// The proxy itself (./http/app: express, undici, ioredis, amqplib, the tokenizer's tables, the catalog)
// is imported only where it runs: a cluster primary never loads it (issue 11: it held ~130 MB of RSS
// for nothing). The production build splits the dynamic import into its own chunk.
const config = loadConfig();
/** What a cluster worker tells the primary once its server listens (restarts are for workers that served). */
const WORKER_SERVING = 'tollgate:proxy-worker-serving';
const logger = createLogger({ name: 'proxy', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });

if (config.WORKERS > 1 && cluster.isPrimary) {
  // Each worker is a full, stateless proxy on the shared port; the primary only supervises. Workers
  // run with the proxy's memory settings (./runtime: V8's young generation, malloc arenas) unless the
  // operator set them.
  const settings = processSettings({ execArgv: process.execArgv, env: process.env });
  cluster.setupPrimary({ execArgv: settings.execArgv });
  logger.info({ workers: config.WORKERS, ...settings }, 'starting proxy workers');
  for (let i = 0; i < config.WORKERS; i++) cluster.fork(settings.env);
  // One metrics listener for the whole process group: the workers' registries, summed.
  const primaryRegistry = new Registry();
  collectDefaultMetrics({ register: primaryRegistry, prefix: 'tollgate_proxy_primary_' });
  const metricsServer = await serveMetricsFromConfig(config, primaryRegistry, logger, 'primary');
  let stopping = false;
  const listening = new Set<number>();
  // A worker listens on its own socket (http/server.ts: SO_REUSEPORT), which Node's cluster does not
  // report as 'listening': the worker says so itself once it serves.
  cluster.on('message', (worker, message: unknown) => {
    if (message === WORKER_SERVING) listening.add(worker.id);
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (!listening.has(worker.id)) {
      // Died before serving (bad config, port taken): restarting would only loop.
      logger.fatal({ pid: worker.process.pid, code, signal }, 'proxy worker failed to start, stopping');
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      process.exitCode = 1;
      return;
    }
    listening.delete(worker.id);
    logger.error({ pid: worker.process.pid, code, signal }, 'proxy worker died, restarting');
    cluster.fork(settings.env);
  });
  onShutdown(logger, async () => {
    stopping = true;
    await metricsServer?.close();
    const workers = Object.values(cluster.workers ?? {});
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (!w || w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
  });
} else {
  const { startProxy } = await import('./http/app');
  const proxy = await startProxy(config, { logger });
  // A cluster worker's metrics are read by the primary's listener; a single process serves its own.
  if (cluster.isWorker) {
    exposeToClusterPrimary([proxy.metrics.registry]);
    process.send?.(WORKER_SERVING);
  }
  const metricsServer = cluster.isWorker
    ? null
    : await serveMetricsFromConfig(config, proxy.metrics.registry, logger);
  onShutdown(logger, async () => {
    await proxy.close();
    await metricsServer?.close();
  });
}
