/**
 * Runs sealed batches, at most `concurrency` at a time, in the order they were queued; each run gets
 * the promise of the run queued before it, so it can settle (ack) strictly after that one: a multiple
 * ack never covers a batch that is still being handled.
 */
export class OrderedRunner<B> {
  private readonly ready: B[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  /** Settles when the latest started run has. */
  private lastSettled: Promise<void> = Promise.resolve();

  constructor(
    private readonly concurrency: number,
    private readonly run: (batch: B, previous: Promise<void>) => Promise<void>,
  ) {}

  /** Batches queued or running. */
  get busy(): boolean {
    return this.inFlight.size > 0 || this.ready.length > 0;
  }

  enqueue(batch: B): void {
    this.ready.push(batch);
    this.drive();
  }

  /** Starts queued batches while fewer than `concurrency` run. */
  drive(): void {
    while (this.inFlight.size < this.concurrency) {
      const batch = this.ready.shift();
      if (batch === undefined) return;
      const previous = this.lastSettled;
      const run: Promise<void> = this.run(batch, previous).finally(() => {
        this.inFlight.delete(run);
        this.drive();
      });
      // The next batch settles after this one, even if this one threw.
      this.lastSettled = run.catch(() => {});
      this.inFlight.add(run);
    }
  }

  /** Resolves once no batch runs (queued ones may remain: see `drain`). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled(this.inFlight);
  }

  /** Runs everything queued, then resolves once nothing runs. */
  async drain(): Promise<void> {
    while (this.busy) {
      this.drive();
      await this.idle();
    }
  }

  /** Forgets the queued batches (not the running ones). */
  clearQueued(): void {
    this.ready.length = 0;
  }
}
