import type { IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, errors } from 'undici';

/**
 * What a relay does with one read of a provider's body: `last` when the body ended in that same read.
 * Returns a promise when the client cannot take more yet (its socket buffer is full): the provider's
 * connection is paused until it settles (a rejection aborts the upstream request).
 */
export type BodySink = (bytes: Buffer, last: boolean) => Promise<void> | undefined;

/** The body of a provider's answer as the pipeline reads it (undici's body, or a `StreamedBody`). */
interface UpstreamBody extends AsyncIterable<Uint8Array> {
  text(): Promise<string>;
  destroy(err?: Error): unknown;
}

/** A provider's answer: status, headers and body. */
export interface UpstreamAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: UpstreamBody;
}

/** Bytes a `StreamedBody` read by iteration holds before it pauses the provider's connection. */
const QUEUE_HIGH_WATER = 64 * 1024;

/**
 * One streamed provider request on undici's dispatch callbacks (`Pool#dispatch`), for the stream relay
 * (issue 30): the provider's reads reach the relay's `BodySink` directly from undici's parser callbacks,
 * with no `Readable`, async iterator or promise per read in between. Each read is handed over once the
 * parser has taken everything the socket had (one microtask later), so a read in which the provider's
 * answer also ended is handed over as the last one (`last`: the relay writes it with the answer's end).
 * Backpressure: a sink's promise pauses undici's connection until it settles.
 *
 * Also an `UpstreamBody` for what does not relay: a JSON answer (`text()`, through `relay`: JSON
 * requests are dispatched this way too, no undici `Readable` per answer) and an error answer read for
 * its message (`readSome`, by iteration). `destroy()` aborts the upstream request; the request's
 * `signal` does too (an `AbortSignal`, or anything with its `reason` and listener methods: pipeline/upstream-abort.ts).
 */
export class StreamedBody implements Dispatcher.DispatchHandler, UpstreamBody {
  private controller: Dispatcher.DispatchController | null = null;
  /** Reads not yet handed over (to the sink, or to an iterator). */
  private queue: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private error: Error | null = null;
  private sink: BodySink | null = null;
  /** A hand-over is scheduled (one microtask per batch of reads). */
  private scheduled = false;
  /** The sink asked to wait (its client's buffer is full). */
  private waiting = false;
  /** The connection was paused because unread reads reached QUEUE_HIGH_WATER (no sink yet). */
  private queueFull = false;
  /** Settles the relay (`relay`'s promise). */
  private settle: ((err: Error | null) => void) | null = null;
  /** An iterator waiting for data. */
  private wake: (() => void) | null = null;
  private started: { resolve(a: UpstreamAnswer): void; reject(err: Error): void } | null = null;
  private abortReason: Error | null = null;

  constructor(private readonly signal: AbortSignal | undefined) {
    if (signal) {
      if (signal.aborted) this.abortReason = reasonOf(signal);
      else signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Dispatches the request on `dispatcher`; resolves with the answer once its headers arrived. */
  static request(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal?: AbortSignal) {
    const body = new StreamedBody(signal);
    return new Promise<UpstreamAnswer>((resolve, reject) => {
      body.started = { resolve, reject };
      dispatcher.dispatch(options, body);
    });
  }

  private readonly onAbort = (): void => {
    const reason = reasonOf(this.signal as AbortSignal);
    if (this.controller) this.controller.abort(reason);
    else this.abortReason = reason;
  };

  private unlisten(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.abortReason) {
      controller.abort(this.abortReason);
      return;
    }
    this.controller = controller;
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return;
    const started = this.started;
    this.started = null;
    started?.resolve({ statusCode, headers, body: this });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.error !== null) return;
    this.queue.push(chunk);
    this.queued += chunk.length;
    if (this.sink !== null) this.schedule();
    else {
      this.wake?.();
      if (this.queued >= QUEUE_HIGH_WATER && !this.queueFull) {
        this.queueFull = true;
        this.controller?.pause();
      }
    }
  }

  onResponseEnd(): void {
    this.ended = true;
    this.unlisten();
    if (this.sink !== null) this.schedule();
    else this.wake?.();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.unlisten();
    if (this.started) {
      const started = this.started;
      this.started = null;
      started.reject(err);
      return;
    }
    if (this.ended || this.error !== null) return;
    this.error = err;
    this.queue = [];
    this.queued = 0;
    if (this.settle) {
      const settle = this.settle;
      this.settle = null;
      settle(err);
    }
    this.wake?.();
  }

  /**
   * Hands every read of the body to `sink` as it arrives (the first ones at once if some came with the
   * headers); resolves when the body ended and its last read was handed over, rejects with the
   * transport's error (an abort, a timeout, a reset). Call at most once, instead of iterating.
   */
  relay(sink: BodySink): Promise<void> {
    this.sink = sink;
    return new Promise<void>((resolve, reject) => {
      if (this.error !== null) {
        reject(this.error);
        return;
      }
      this.settle = (err) => (err === null ? resolve() : reject(err));
      if (this.queue.length > 0 || this.ended) this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.waiting) return;
    this.scheduled = true;
    queueMicrotask(this.handOver);
  }

  /** Hands the reads of this batch to the sink, as one buffer; settles the relay at the end. */
  private readonly handOver = (): void => {
    this.scheduled = false;
    if (this.error !== null || this.settle === null || this.waiting) return;
    const queue = this.queue;
    if (queue.length > 0) {
      const bytes = queue.length === 1 ? (queue[0] as Buffer) : Buffer.concat(queue, this.queued);
      this.queue = [];
      this.queued = 0;
      let wait: Promise<void> | undefined;
      try {
        wait = (this.sink as BodySink)(bytes, this.ended);
      } catch (err) {
        this.destroy(err as Error);
        return;
      }
      if (wait !== undefined) {
        this.waiting = true;
        this.queueFull = false;
        this.controller?.pause();
        wait.then(this.resume, (err: Error) => this.destroy(err));
        return;
      }
      // Paused while nobody took the reads (before `relay`): the sink takes them now.
      if (this.queueFull) {
        this.queueFull = false;
        if (!this.ended) this.controller?.resume();
      }
    }
    if (this.ended && this.settle !== null && this.error === null) {
      const settle = this.settle;
      this.settle = null;
      settle(null);
    }
  };

  private readonly resume = (): void => {
    this.waiting = false;
    if (this.error !== null) return;
    if (this.queue.length > 0 || this.ended) this.handOver();
    if (!this.waiting && !this.ended) this.controller?.resume();
  };

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    try {
      for (;;) {
        if (this.queue.length > 0) {
          const chunk = this.queue.shift() as Buffer;
          this.queued -= chunk.length;
          if (this.queued < QUEUE_HIGH_WATER && !this.ended) {
            this.queueFull = false;
            this.controller?.resume();
          }
          yield chunk;
          continue;
        }
        if (this.error !== null) throw this.error;
        if (this.ended) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = null;
      }
    } finally {
      // Left before the end (a `break`, an error): the rest of the answer is not wanted.
      if (!this.ended && this.error === null) this.destroy();
    }
  }

  /**
   * The whole body as text (a JSON answer): its reads collected through `relay` (no async iterator,
   * no promise per read). Instead of `relay` or iterating; rejects like `relay`.
   */
  async text(): Promise<string> {
    const parts: Buffer[] = [];
    await this.relay((bytes) => {
      parts.push(bytes);
      return undefined;
    });
    return (parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)).toString('utf8');
  }

  /** Aborts the upstream request (nothing more is read); a relay in progress rejects with `err`. */
  destroy(err?: Error): void {
    if (this.ended || this.error !== null) return;
    const reason = err ?? new errors.RequestAbortedError();
    this.unlisten();
    if (this.controller) this.controller.abort(reason);
    else this.abortReason = reason;
    // undici reports the abort through onResponseError; if it already finished, settle here.
    if (this.error === null) this.onResponseError(this.controller as Dispatcher.DispatchController, reason);
  }
}

function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new errors.RequestAbortedError();
}
