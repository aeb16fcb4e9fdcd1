/**
 * Drain on client cancel (issue 22). A client that goes away does not end what the provider bills:
 * once a request reached a provider, the provider charges for the prompt and for everything it
 * generates. So the completion keeps reading the provider's answer — discarding it, nothing is
 * buffered beyond what the relay keeps for the estimate — until the usage arrives, and bills that
 * usage (`usage_source` `provider`, the record marked cancelled). The drain is bounded by a grace
 * period (CANCEL_DRAIN_MS) and the completion's duration cap (COMPLETION_MAX_DURATION_MS); past it
 * the upstream request is aborted and the upper bound of what the provider can have charged is billed.
 *
 * A draining completion holds no client socket (the client closed it); it keeps its concurrency slot
 * of its key and account (released by `finish`: cancel-and-resend must not multiply the connections
 * one key holds), its upstream slot (the provider connection is still in use) and its spend
 * reservation, settled once the usage is known.
 */

/** The default grace period of a drain (CANCEL_DRAIN_MS). */
export const DEFAULT_CANCEL_DRAIN_MS = 30_000;

/** What a drain needs of its completion. */
interface Drainable {
  /** Something was sent to a provider and its answer is not over (the upstream slot is held). */
  readonly atProvider: boolean;
  /** Ends the drain: aborts the upstream request (the relay then bills the upper bound). */
  expireDrain(): void;
}

/**
 * The drain of one cancelled completion: started when its client goes away while a provider holds
 * the request, stopped when the completion ends. `start` returns false when there is nothing to drain
 * (no attempt in flight: the caller aborts at once).
 */
export class Drain {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly graceMs: number) {}

  start(c: Drainable): boolean {
    if (!c.atProvider || this.graceMs <= 0) return false;
    if (this.timer !== null) return true;
    this.timer = setTimeout(() => {
      this.timer = null;
      c.expireDrain();
    }, this.graceMs);
    this.timer.unref();
    return true;
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
