import { AppError } from '@tollgate/errors';
import type { FailureKind } from '@tollgate/events';

/**
 * SQLSTATE classes that mean "the database could not do it now", not "this data is wrong":
 * 08 connection exception, 40 transaction rollback (serialization failure, deadlock),
 * 53 insufficient resources, 57 operator intervention (shutdown, cannot connect now), 58 system error.
 */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/** Node socket and DNS errors: the dependency is unreachable. */
const TRANSIENT_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Messages of pg's pool and client and of ioredis when the server is gone (they carry no code). */
const TRANSIENT_MESSAGE =
  /timeout exceeded when trying to connect|connection terminated|not queryable|Connection is closed|Stream isn't writeable|max retries per request|ECONNREFUSED|ECONNRESET|ETIMEDOUT/i;

/**
 * How the billing worker treats a failed batch: `transient` (Postgres or Redis unreachable,
 * serialization failure, deadlock, server shutting down) is retried in-process until the dependency
 * returns, or the keys service is unavailable; anything else is `permanent` — the batch is split and the event that fails on its own is
 * dead-lettered (after a few attempts), so it never holds up the others.
 */
export function classifyBillingFailure(err: unknown): FailureKind {
  // A service billing asks (keys: who owns a key) did not answer: it will.
  if (err instanceof AppError && err.type === 'service_unavailable') return 'transient';
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (TRANSIENT_ERRNO.has(code)) return 'transient';
      if (/^[0-9A-Z]{5}$/.test(code))
        return TRANSIENT_SQLSTATE_CLASSES.has(code.slice(0, 2)) ? 'transient' : 'permanent';
    }
    if (name === 'MaxRetriesPerRequestError') return 'transient';
    if (typeof message === 'string' && TRANSIENT_MESSAGE.test(message)) return 'transient';
    e = (e as { cause?: unknown }).cause;
  }
  return 'permanent';
}
