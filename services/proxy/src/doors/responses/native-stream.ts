import type { AppError } from '@tollgate/errors';
import { DeferredEvents } from '../deferred-events';
import { isResponsesUsage, outputTextOf, withEcho } from './native';
import type { ResponseEcho } from './request';

/**
 * A native provider's Responses events, relayed: each event passes as it came, except the lifecycle
 * events (`response.created` … `response.completed`), whose `response` gets the request id, the
 * catalog model and the provider's name; the terminal event (`response.completed` / `.incomplete` /
 * `.failed`) is held back and sent last with the priced usage (`cost`) once the completion has ended
 * (`end`). A stream that stops without one ends with a `response.failed` of the gateway's making.
 */

type Json = Record<string, unknown>;

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** The events that carry the Response (rewritten), whatever else may carry one (`RESPONSE_KEY`). */
const LIFECYCLE = new Set([
  'response.created',
  'response.queued',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);
/** The key of a Response (inside a string value its quotes are escaped: never a false match there). */
const RESPONSE_KEY = '"response"';
const SEQUENCE_KEY = '"sequence_number":';

/** An event's `sequence_number`, read from its JSON text (null: none there). */
function sequenceOf(data: string): number | null {
  const i = data.indexOf(SEQUENCE_KEY);
  if (i === -1) return null;
  let n = 0;
  let digits = 0;
  for (let j = i + SEQUENCE_KEY.length; j < data.length; j++) {
    const c = data.charCodeAt(j);
    if (c === 32 && digits === 0) continue;
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
    digits++;
  }
  return digits > 0 ? n : null;
}

export class NativeEvents {
  readonly #requestId: string;
  readonly #model: string;
  readonly #provider: string;
  /** The latest Response the provider sent (lifecycle events), rewritten. */
  #response: Json | null = null;
  #terminal: { type: string; event: Json } | null = null;
  #lastSeq = -1;
  #text = '';
  usage: unknown = null;
  upstreamId: string | null = null;

  readonly #echo: ResponseEcho;

  constructor(requestId: string, model: string, provider: string, echo: ResponseEcho) {
    this.#requestId = requestId;
    this.#model = model;
    this.#provider = provider;
    this.#echo = echo;
  }

  /** The provider's own terminal event came (completed, incomplete or failed). */
  get ended(): boolean {
    return this.#terminal !== null;
  }

  /** The finish reason of the usage event: `stop`, `length` (incomplete) or `error`. */
  get finishReason(): string | null {
    const type = this.#terminal?.type;
    return type === 'response.completed'
      ? 'stop'
      : type === 'response.incomplete'
        ? 'length'
        : type
          ? 'error'
          : null;
  }

  /** What was produced, for the estimate. */
  producedText(): string {
    this.#deltas.settle();
    return this.#response ? this.#text + outputTextOf(this.#response) : this.#text;
  }

  /** Events relayed as they came, read for their `delta` text only when the estimate needs it. */
  readonly #deltas = new DeferredEvents((data) => {
    try {
      const e = JSON.parse(data) as Json;
      if (typeof e.delta === 'string') this.#text += e.delta;
    } catch {
      // not JSON: no text
    }
  });

  /**
   * One provider event → the bytes to relay ('' when held or dropped); an `error` event → its message.
   * An event named by its `event:` line that carries no `response` (the deltas, the items and parts:
   * all but the lifecycle events) passes as it came without being parsed — its sequence number read
   * from its text, its delta kept unparsed for the estimate (DeferredEvents); the others are parsed.
   */
  event(
    type: string,
    data: string,
  ): { out: string; error?: { code: number | null; message: string | null } } {
    if (type !== '' && type !== 'error' && !LIFECYCLE.has(type) && !data.includes(RESPONSE_KEY)) {
      const seq = sequenceOf(data);
      if (seq !== null) this.#lastSeq = seq;
      this.#deltas.add(data);
      return { out: `event: ${type}\ndata: ${data}\n\n` };
    }
    this.#deltas.settle(); // the text in order
    let e: Json;
    try {
      e = JSON.parse(data) as Json;
    } catch {
      return { out: '' };
    }
    const kind = typeof e.type === 'string' ? e.type : type;
    if (typeof e.sequence_number === 'number') this.#lastSeq = e.sequence_number;
    if (kind === 'error') {
      const code = typeof e.code === 'number' ? e.code : null;
      return { out: '', error: { code, message: typeof e.message === 'string' ? e.message : null } };
    }
    if (typeof e.delta === 'string') this.#text += e.delta;
    const response = e.response;
    if (typeof response === 'object' && response !== null) {
      const r = response as Json;
      if (this.upstreamId === null && typeof r.id === 'string') this.upstreamId = r.id;
      withEcho(r, this.#echo);
      r.id = this.#requestId;
      r.model = this.#model;
      r.provider = this.#provider;
      this.#response = r;
      if (TERMINAL.has(kind)) {
        this.usage = r.usage;
        this.#terminal = { type: kind, event: e };
        return { out: '' };
      }
    }
    return { out: `event: ${kind}\ndata: ${JSON.stringify(e)}\n\n` };
  }

  /**
   * The last event: the provider's terminal one with `usage` priced (the provider's counts plus `cost`),
   * or — the stream broke off, or failed after the head — `response.failed` with the error.
   */
  end(usage: Json, error: { code: string; message: string } | null, cause?: AppError): string {
    const terminal = this.#terminal;
    if (terminal !== null && error === null) {
      const r = terminal.event.response as Json;
      r.usage = isResponsesUsage(r.usage)
        ? { ...(r.usage as Json), cost: usage.cost, is_byok: false }
        : usage;
      return `event: ${terminal.type}\ndata: ${JSON.stringify(terminal.event)}\n\n`;
    }
    const response: Json = {
      ...(this.#response ?? { id: this.#requestId, object: 'response', model: this.#model, output: [] }),
      status: 'failed',
      error: error ?? {
        code: 'server_error',
        message: cause?.message ?? 'The provider ended the stream early',
      },
      usage,
    };
    const event = { type: 'response.failed', sequence_number: this.#lastSeq + 1, response };
    return `event: response.failed\ndata: ${JSON.stringify(event)}\n\n`;
  }
}
