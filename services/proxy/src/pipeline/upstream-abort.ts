/** A listener of the upstream request's abort (upstream/streamed.ts `StreamedBody` takes an EventTarget-like `signal`). */
type Listener = () => void;

/**
 * The abort of a completion's upstream request (the duration cap, a stop, the end of a drain, a client
 * gone with nothing in flight). Most requests are never aborted, yet an `AbortSignal` costs ≈ 4 µs to
 * make and listen to on every one (issue 30; `new AbortController().signal` plus undici's native
 * abort listener, Node 20 on the bench machine). So the real `signal` is made on first use only (failover
 * sleeps, waits on the client, streamed requests), already aborted when the abort came first; a JSON
 * request hands its `StreamedBody` (upstream/streamed.ts) `listenable` instead, which it listens on like
 * an EventTarget: the same abort, with the same reason (an `AbortError` DOMException, as
 * `AbortController.abort()` gives).
 */
export class UpstreamAbort {
  #controller: AbortController | null = null;
  #aborted = false;
  #reason: unknown = undefined;
  #listeners: Listener[] = [];

  /** What a JSON request's `StreamedBody` listens on (`aborted` is never true here: see `forRequest`). */
  readonly listenable = {
    addEventListener: (_type: 'abort', listener: Listener) => {
      this.#listeners.push(listener);
    },
    removeEventListener: (_type: 'abort', listener: Listener) => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    },
    reason: undefined as unknown,
  };

  get aborted(): boolean {
    return this.#aborted;
  }

  /** A real AbortSignal tied to this abort (made on first use). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * The signal for an undici request: `listenable` while not aborted, else the real (aborted) signal, so
   * a request started after the abort is refused at once as it would be with an AbortSignal.
   */
  get forRequest(): AbortSignal {
    return (this.#aborted ? this.signal : this.listenable) as unknown as AbortSignal;
  }

  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = new DOMException('This operation was aborted', 'AbortError');
    this.listenable.reason = this.#reason;
    this.#controller?.abort(this.#reason);
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}
