export interface BackoffOptions {
  /** First delay. */
  initialMs: number;
  /** Cap of the delay. */
  maxMs: number;
}

/** Capped exponential backoff with ±20% jitter; `attempt` counts from 1. */
export function backoffDelay(attempt: number, { initialMs, maxMs }: BackoffOptions): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
  const jittered = base * (0.8 + Math.random() * 0.4);
  return Math.round(Math.min(maxMs, jittered));
}

/** A sleep that can be cut short (on close), resolving either way. */
export function interruptibleSleep(ms: number): { promise: Promise<void>; wake(): void } {
  let wake = () => {};
  const promise = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { promise, wake };
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
