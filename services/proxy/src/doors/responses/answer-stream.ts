import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { chunkSocket } from '../../http/http-chunk';
import { waitForClient } from '../../pipeline/backpressure';
import type { Completion } from '../../pipeline/completion';
import { midStreamError, streamEndedEarly } from '../../pipeline/errors';
import type { Outcome, UsageSource } from '../../pipeline/outcome';
import { SSE_HEAD, writeSseHead } from '../../pipeline/sse-head';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import { SseBytes, type SseEventSink } from '../../providers/sse';
import type { TokenCounts } from '../../providers/wire-format';
import { utf8 } from '../chat/chunk';
import { writeChunk } from '../chunk-write';
import type { AnswerStream } from '../door';
import { openAIError } from './errors';
import { isResponsesUsage, tokensFromResponsesUsage } from './native';
import { NativeEvents } from './native-stream';
import { contextOf } from './request-of';
import { responsesUsage } from './response';
import { ResponsesEvents } from './stream';

type Json = Record<string, unknown>;

const KEEP_ALIVE = ': keep-alive\n\n';

/**
 * The Responses door's stream (`AnswerStream`): the provider's answer, bridged to OpenAI chat chunks
 * by its wire format, becomes the Responses events (stream.ts) as each chunk completes. The first
 * events (`response.created`, `response.in_progress`) leave with the head; the end —
 * `response.completed` with the priced usage (or `response.failed` after a provider error) — is the
 * answer's last write, once the completion has ended (`finish`). Keep-alive comments, the write
 * timeout and the held last read work as in the chat door's relay.
 */
function flushPending(stream: ResponsesStream): void {
  stream.flushPending();
}

export class ResponsesStream implements AnswerStream, SseEventSink {
  readonly #c: Completion;
  readonly #res: ServerResponse;
  readonly #writeTimeoutMs: number;
  readonly #reader = new SseBytes();
  readonly #events: ResponsesEvents;
  #providerUsage: unknown = null;
  #upstreamId: string | null = null;
  #sawDone = false;
  #keepAlive: NodeJS.Timeout | null = null;
  #lastWriteAt = Date.now();
  /** Output of the provider's last read, held to leave with the answer's end (one write). */
  #held: string[] | null = null;
  /** Output of the read being pushed. */
  #out = '';
  /**
   * What `commitHead` wrote (translated: response.created and response.in_progress), sent with the
   * first bytes written after it, or alone at the end of the event-loop turn when nothing follows.
   */
  #pending = '';
  /** Something was written to the client (the head went out with it). */
  #wrote = false;
  /** The provider speaks the Responses API itself (native.ts): its events are relayed. */
  #native: NativeEvents | null = null;
  terminated = false;

  constructor(c: Completion, res: ServerResponse, writeTimeoutMs: number) {
    this.#c = c;
    this.#res = res;
    this.#writeTimeoutMs = writeTimeoutMs;
    this.#events = new ResponsesEvents(contextOf(c));
  }

  startKeepAlive(intervalMs: number): void {
    this.#keepAlive = setInterval(() => {
      if (this.#res.writableEnded || this.#res.destroyed) return;
      if (Date.now() - this.#lastWriteAt < intervalMs - 5) return;
      writeSseHead(this.#res);
      this.#write(KEEP_ALIVE);
    }, intervalMs);
    this.#keepAlive.unref();
  }

  stopKeepAlive(): void {
    if (this.#keepAlive) clearInterval(this.#keepAlive);
    this.#keepAlive = null;
  }

  /**
   * The 200 and the SSE head; translated, with response.created and response.in_progress (a native
   * provider sends its own, relayed). They leave with the first bytes written in this event-loop
   * turn — the provider's first events usually arrive in the same read as its headers — else alone
   * right after it: one write and one wake-up of the client fewer per stream, as in the chat relay.
   */
  commitHead(native: boolean): void {
    if (this.#c.cancelled) return;
    if (!this.#res.headersSent) this.#res.writeHead(200, SSE_HEAD);
    if (native) {
      const { requestId, model, provider } = this.#c;
      this.#native = new NativeEvents(requestId, model.id, provider.name, contextOf(this.#c).echo);
    } else this.#pending = this.#events.start();
    setImmediate(flushPending, this);
  }

  /**
   * Sends what `commitHead` left unsent when nothing was written in its turn (a slow first token):
   * translated, the head and the first events in one socket write (`#send`); native, the head alone.
   */
  flushPending(): void {
    if (this.#wrote || this.#c.cancelled || this.#res.writableEnded || this.#res.destroyed) return;
    const text = this.#pending;
    this.#pending = '';
    if (text.length > 0) this.#send(text, chunkSocket(this.#res));
    else this.#res.flushHeaders();
  }

  #write(text: string): boolean {
    // A cancelled completion drains the provider's answer for its usage (pipeline/drain.ts): nothing is sent.
    if (this.#c.cancelled) return true;
    if (this.#pending.length > 0) {
      text = this.#pending + text;
      this.#pending = '';
    }
    this.#wrote = true;
    this.#lastWriteAt = Date.now();
    return this.#res.write(text);
  }

  push(bytes: Buffer, last = false): Promise<void> | undefined {
    this.#reader.push(bytes, this);
    let text = this.#out;
    this.#out = '';
    if (text.length === 0 || this.#c.cancelled) return undefined;
    if (this.#pending.length > 0) {
      text = this.#pending + text;
      this.#pending = '';
    }
    if (last || this.#held !== null) {
      this.stopKeepAlive();
      this.#hold(text);
      return undefined;
    }
    const socket = chunkSocket(this.#res);
    if (this.#send(text, socket)) return undefined;
    return waitForClient(socket ?? this.#res, this.#c, this.#writeTimeoutMs, this.#stalled);
  }

  /**
   * Writes `text`. Where the chat relay would (`socket`: http-chunk.ts `chunkSocket`), it is one
   * HTTP/1.1 chunk written to the client's socket itself, the head in front if it has not left
   * (`writeChunk`): head, first events and first content in one write; else through `res.write`.
   * False: the client's buffer is full.
   */
  #send(text: string, socket: Socket | null): boolean {
    if (socket === null) return this.#write(text);
    this.#wrote = true;
    this.#lastWriteAt = Date.now();
    return writeChunk(this.#res, socket, '', text);
  }

  #hold(text: string): void {
    if (this.#held === null) this.#held = [text];
    else this.#held.push(text);
  }

  readonly #stalled = (): void => {
    this.#c.log.warn({ writeTimeoutMs: this.#writeTimeoutMs }, 'client stopped reading: stream cut');
    this.#c.cancel();
    this.#res.destroy();
  };

  endOfInput(): void {
    this.#reader.end(this);
    if (this.#out.length > 0) {
      this.#hold(this.#out);
      this.#out = '';
    }
    const ended = this.#native ? this.#native.ended : this.#sawDone || this.#events.finishReason !== null;
    if (!this.terminated && !ended) {
      this.#c.fail(streamEndedEarly(this.#c.provider.name));
    }
  }

  /** One OpenAI chunk of the provider (SseEventSink). */
  event(type: string, buf: Buffer, start: number, end: number): void {
    if (this.terminated) return;
    const data = utf8(buf, start, end);
    if (this.#native) {
      const { out, error } = this.#native.event(type, data);
      if (error) this.#providerError(error);
      else this.#out += out;
      return;
    }
    if (data === '[DONE]') {
      this.#sawDone = true;
      return;
    }
    let chunk: Json;
    try {
      chunk = JSON.parse(data) as Json;
    } catch {
      if (type === 'error') this.#providerError({ message: data });
      return;
    }
    if (typeof chunk.error === 'object' && chunk.error !== null) {
      this.#providerError(chunk.error as Json);
      return;
    }
    if (this.#upstreamId === null && typeof chunk.id === 'string') this.#upstreamId = chunk.id;
    if (isProviderUsage(chunk.usage)) this.#providerUsage = chunk.usage;
    this.#out += this.#events.chunk(chunk);
  }

  #providerError(err: { code?: unknown; status?: unknown; message?: unknown }): void {
    const code = [err.code, err.status].find((v) => typeof v === 'number' && v >= 400 && v <= 599) as
      | number
      | undefined;
    const detail = typeof err.message === 'string' && err.message.length > 0 ? err.message : null;
    const failure = midStreamError(code ?? 502, detail, this.#c.provider.name);
    this.#c.fail(failure.error, failure.detail);
    this.#c.log.warn({ provider: this.#c.provider.name, code, detail }, 'provider error mid-stream');
    this.terminated = true;
  }

  /** Priced from the provider's usage, else the estimate of what was produced; the last events. */
  finish(): Outcome {
    this.stopKeepAlive();
    const c = this.#c;
    const native = this.#native;
    let tokens: TokenCounts;
    let source: UsageSource;
    if (native && isResponsesUsage(native.usage)) {
      tokens = tokensFromResponsesUsage(native.usage);
      source = 'provider';
    } else if (!native && isProviderUsage(this.#providerUsage)) {
      tokens = tokensFromUsage(this.#providerUsage);
      source = 'provider';
    } else {
      tokens = c.estimate((native ?? this.#events).producedText());
      source = 'estimated';
    }
    const cost = c.cost(tokens);
    let lastBytes: string | null = null;
    if (!c.cancelled && !this.#res.writableEnded && !this.#res.destroyed) {
      const usage = responsesUsage(tokens, cost);
      const failure = c.error
        ? { code: openAIError(c.error).type as string, message: c.error.message }
        : null;
      let end: string;
      if (native) end = native.end(usage, failure);
      else if (failure) end = this.#events.fail(failure, usage);
      else end = this.#events.end(usage, c.provider.name);
      lastBytes = this.#pending + (this.#held ?? []).join('') + end;
    }
    this.#held = null;
    this.#pending = '';
    return {
      kind: 'served',
      tokens,
      source,
      costUnits: cost,
      finishReason: c.error ? 'error' : (native ?? this.#events).finishReason,
      upstreamId: native ? native.upstreamId : this.#upstreamId,
      lastBytes,
    };
  }
}
