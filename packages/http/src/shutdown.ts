import type { Logger } from '@tollgate/logger';

// Its own module (and export `@tollgate/http/shutdown`): a process that only supervises, like the
// proxy's cluster primary, can use it without loading express and undici.
/** Runs `stop` once on SIGTERM/SIGINT, then exits. */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => handler('SIGTERM'));
  process.once('SIGINT', () => handler('SIGINT'));
}
