/**
 * Which provider answers move a request to the next candidate (before the first byte reached the
 * client): timeouts and conflicts (408, 409), rate limits (429), server errors (5xx), a rejected
 * credential of ours (401, 403) and our account at the provider being out of credit (402). The
 * caller's own mistakes (400, 404, 413, 422, …) are answered as they are: another provider would
 * refuse them too. (Anthropic also says "credit balance too low" with a 400 `billing_error`: its
 * adapter classifies the body, providers/anthropic/errors.ts.)
 */
export const failsOver = (status: number): boolean =>
  status === 408 ||
  status === 409 ||
  status === 429 ||
  status >= 500 ||
  status === 401 ||
  status === 402 ||
  status === 403;

/** A rejected or unpaid key (skip it for a while) rather than a failing provider. */
export const keyRejected = (status: number): boolean =>
  status === 401 || status === 402 || status === 403 || status === 429;

/** `Retry-After` (seconds or an HTTP date) in ms, capped; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, capMs = 60_000): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const seconds = Number(v);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(capMs, seconds * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.min(capMs, Math.max(0, at - Date.now()));
}

/** Jittered exponential backoff before retrying the same provider: 100 ms doubling, ±20 %, capped. */
export function backoffMs(attempt: number, capMs = 2_000): number {
  const base = Math.min(capMs, 100 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}
