import type { ServerResponse as Response } from 'node:http';
import type { Socket } from 'node:net';
import { chunkSocket } from '../../http/http-chunk';
import { waitForClient } from '../../pipeline/backpressure';
import type { Completion } from '../../pipeline/completion';
import { midStreamError, streamEndedEarly } from '../../pipeline/errors';
import type { Outcome, UsageSource } from '../../pipeline/outcome';
import { SSE_HEAD, writeSseHead } from '../../pipeline/sse-head';
import { classCode, classifyStreamError } from '../../providers/anthropic/errors';
import { finishReason } from '../../providers/anthropic/response';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import { SseBytes, type SseEventSink } from '../../providers/sse';
import type { TokenCounts } from '../../providers/wire-format';
import { utf8 } from '../chat/chunk';
import { writeChunk } from '../chunk-write';
import type { AnswerStream } from '../door';
import { KeptText } from '../kept-text';
import { anthropicError, errorEventOf } from './errors';
import { NativeStreamReader } from './native';
import { MessagesEventWriter } from './stream';

type Json = Record<string, unknown>;

const KEEP_ALIVE = ': keep-alive\n\n';

/**
 * The Messages door's stream (`AnswerStream`). Two ways, fixed by `commitHead(native)`:
 *
 * - **native** (an Anthropic-format provider): the provider's bytes go to the client as they came;
 *   a reader (native.ts) takes the usage from `message_start` / `message_delta`, the produced text
 *   (bounded, for an estimate), the end and any `error` event (relayed as sent, then the stream stops).
 * - **translated** (any other provider): the OpenAI chunks the pipeline hands over (the provider's own
 *   or its wire format's bridge) are rendered as Anthropic's events (stream.ts); their usage chunk is
 *   held for `message_delta`; an error becomes an Anthropic `error` event.
 *
 * Writes wait for a client that stops reading, up to `writeTimeoutMs` (then the stream is cut and the
 * completion cancelled, billed for what was produced), as the chat door's relay does.
 */
/** `before`, the held pieces and `after` as one string, or one Buffer when a piece is the provider's bytes. */
function joined(before: string, held: Array<string | Buffer> | null, after: string): string | Buffer {
  if (held === null) return before + after;
  if (held.every((p) => typeof p === 'string')) return before + held.join('') + after;
  const parts = held.map((p) => (typeof p === 'string' ? Buffer.from(p) : p));
  if (before.length > 0) parts.unshift(Buffer.from(before));
  if (after.length > 0) parts.push(Buffer.from(after));
  return Buffer.concat(parts);
}

function flushPending(stream: MessagesStream): void {
  stream.flushPending();
}

export class MessagesStream implements AnswerStream, SseEventSink {
  private native = false;
  private readonly nativeReader = new NativeStreamReader();
  private readonly sse = new SseBytes();
  /** Translated: the events of the read being pushed. */
  private out = '';
  private readonly writer: MessagesEventWriter;
  /** The produced text (for an estimate), from the chunks parsed for their events: one read of each. */
  private readonly produced = new KeptText();
  private usage: unknown = null;
  private sawEnd = false;
  private upstreamId: string | null = null;
  private finish_: string | null = null;
  /** The provider's own error event reached the client (native): no second one is added. */
  private relayedError = false;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  private lastWriteAt = Date.now();
  /** Bytes of the provider's last read, sent with the end of the answer in one write. */
  private held: Array<string | Buffer> | null = null;
  /**
   * What `commitHead` wrote (translated: `message_start`), sent with the first bytes written after it
   * — head, first events and the first content in one write, as the chat door's relay does — or alone
   * at the end of the event-loop turn (`flushPending`) when nothing follows in it.
   */
  private pending = '';
  /** Something was written to the client (the head went out with it). */
  private wrote = false;
  terminated = false;

  constructor(
    private readonly c: Completion,
    private readonly res: Response,
    private readonly writeTimeoutMs = 30_000,
  ) {
    this.writer = new MessagesEventWriter(c.requestId, c.model.id);
  }

  startKeepAlive(intervalMs: number): void {
    this.keepAliveTimer = setInterval(() => {
      if (this.res.writableEnded || this.res.destroyed || Date.now() - this.lastWriteAt < intervalMs - 5)
        return;
      writeSseHead(this.res);
      this.write(KEEP_ALIVE);
    }, intervalMs);
    this.keepAliveTimer.unref();
  }

  stopKeepAlive(): void {
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }

  /**
   * The 200 and the SSE head (translated: with `message_start`), leaving with the first bytes written
   * in this event-loop turn — the provider's first events usually arrive in the same read as its
   * headers — else alone right after it (one write and one wake-up of the client fewer per stream).
   */
  commitHead(native: boolean): void {
    this.native = native;
    if (this.c.cancelled) return;
    if (!this.res.headersSent) this.res.writeHead(200, SSE_HEAD);
    if (!native) this.pending = this.writer.start();
    setImmediate(flushPending, this);
  }

  /**
   * Sends what `commitHead` left unsent when nothing was written in its turn (a slow first token):
   * translated, the head and `message_start` in one socket write (`send`); native, the head alone.
   */
  flushPending(): void {
    if (this.wrote || this.c.cancelled || this.res.writableEnded || this.res.destroyed) return;
    if (this.pending.length > 0) this.send('', chunkSocket(this.res));
    else this.res.flushHeaders();
  }

  push(bytes: Buffer, last = false): Promise<void> | undefined {
    // Native: the provider's bytes themselves (never decoded and encoded again).
    const out = this.native ? this.passThrough(bytes) : this.translated(bytes);
    // A cancelled completion drains (pipeline/drain.ts): the bytes were read for the usage, and go nowhere.
    if (out.length === 0 || this.c.cancelled) return undefined;
    if (last || this.held !== null) {
      this.stopKeepAlive();
      if (this.held === null) this.held = [out];
      else this.held.push(out);
      return undefined;
    }
    const socket = chunkSocket(this.res);
    if (this.send(out, socket)) return undefined;
    return waitForClient(socket ?? this.res, this.c, this.writeTimeoutMs, this.stalled);
  }

  /**
   * Writes what `commitHead` left unsent and `out`. Where the chat relay would (`socket`: http-chunk.ts
   * `chunkSocket`), they are one HTTP/1.1 chunk written to the client's socket itself, the head in
   * front if it has not left (`writeChunk`) — head, first events and first content, translated or the
   * provider's own bytes, in one write; else through `res.write`. False: the client's buffer is full.
   */
  private send(out: string | Buffer, socket: Socket | null): boolean {
    if (socket === null) return this.write(out);
    this.wrote = true;
    this.lastWriteAt = Date.now();
    const pending = this.pending;
    this.pending = '';
    return writeChunk(this.res, socket, pending, out);
  }

  /** Translated: the events one read completes, as SSE text ('' when none). */
  private translated(bytes: Buffer): string {
    this.sse.push(bytes, this);
    const out = this.out;
    this.out = '';
    return out;
  }

  private readonly stalled = (): void => {
    this.c.log.warn(
      { writeTimeoutMs: this.writeTimeoutMs },
      'client stopped reading: stream cut (the answer drains)',
    );
    this.c.cancel();
    this.res.destroy();
  };

  private write(out: string | Buffer): boolean {
    if (this.c.cancelled) return true;
    if (this.pending.length > 0) {
      out = typeof out === 'string' ? this.pending + out : Buffer.concat([Buffer.from(this.pending), out]);
      this.pending = '';
    }
    this.wrote = true;
    this.lastWriteAt = Date.now();
    return this.res.write(out);
  }

  /** Native: the bytes as they came; the reader notes usage, text, the end and an error event. */
  private passThrough(bytes: Buffer): Buffer {
    const r = this.nativeReader;
    r.push(bytes);
    if (r.error && !this.terminated) this.providerError(r.error.type, r.error.message);
    return bytes;
  }

  /** The provider's `error` event (relayed to the client as it came): recorded, and the stream stops. */
  private providerError(type: string, message: string): void {
    const code = classCode(classifyStreamError({ type: 'error', error: { type, message } }).errorClass);
    const failure = midStreamError(code, message, this.c.provider.name);
    this.c.fail(failure.error, failure.detail);
    this.c.log.warn({ provider: this.c.provider.name, code, detail: message }, 'provider error mid-stream');
    this.relayedError = true;
    this.terminated = true;
  }

  /** Translated: one OpenAI chunk event → Anthropic events (SseEventSink; called while a read is pushed). */
  event(_type: string, buf: Buffer, start: number, end: number): void {
    if (this.terminated) return;
    const data = utf8(buf, start, end);
    if (data === '[DONE]') {
      this.sawEnd = true;
      return;
    }
    let chunk: Json;
    try {
      chunk = JSON.parse(data) as Json;
    } catch {
      return;
    }
    if (typeof chunk.error === 'object' && chunk.error !== null) {
      const e = chunk.error as Json;
      const code = [e.code, e.status].find((v) => typeof v === 'number' && v >= 400 && v <= 599) as
        | number
        | undefined;
      const failure = midStreamError(
        code ?? 502,
        typeof e.message === 'string' ? e.message : null,
        this.c.provider.name,
      );
      this.c.fail(failure.error, failure.detail);
      this.terminated = true;
      return;
    }
    if (this.upstreamId === null && typeof chunk.id === 'string') this.upstreamId = chunk.id;
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    this.produced.addChunk(chunk);
    const choice = Array.isArray(chunk.choices) ? (chunk.choices[0] as Json | undefined) : undefined;
    if (typeof choice?.finish_reason === 'string') this.finish_ = choice.finish_reason;
    this.out += this.writer.chunk(chunk);
  }

  endOfInput(): void {
    if (this.native) {
      this.nativeReader.end();
      if (this.nativeReader.error && !this.terminated)
        this.providerError(this.nativeReader.error.type, this.nativeReader.error.message);
      if (!this.terminated && !this.nativeReader.done) this.c.fail(streamEndedEarly(this.c.provider.name));
      return;
    }
    this.sse.end(this);
    const text = this.out;
    this.out = '';
    if (text.length > 0) {
      if (this.held === null) this.held = [text];
      else this.held.push(text);
    }
    if (!this.terminated && !this.sawEnd && this.finish_ === null)
      this.c.fail(streamEndedEarly(this.c.provider.name));
  }

  private tokens(): { tokens: TokenCounts; source: UsageSource } {
    const c = this.c;
    if (this.native) {
      const t = this.nativeReader.tokens();
      if (t) return { tokens: t, source: 'provider' };
      return {
        tokens: c.estimate(this.nativeReader.text, this.nativeReader.extraChars),
        source: 'estimated',
      };
    }
    if (isProviderUsage(this.usage)) return { tokens: tokensFromUsage(this.usage), source: 'provider' };
    const produced = this.produced.result();
    return { tokens: c.estimate(produced.text, produced.overflowBytes), source: 'estimated' };
  }

  finish(): Outcome {
    this.stopKeepAlive();
    const c = this.c;
    const { tokens, source } = this.tokens();
    const cost = c.cost(tokens);
    let lastBytes: string | Buffer | null = null;
    if (!c.cancelled && !this.res.writableEnded && !this.res.destroyed) {
      let end = '';
      if (c.error) {
        if (!this.relayedError) end = errorEventOf(anthropicError(c.error));
      } else if (!this.native) end = this.writer.finish(tokens);
      lastBytes = joined(this.pending, this.held, end);
    }
    this.held = null;
    this.pending = '';
    const stop = this.native ? this.nativeReader.stopReason : null;
    return {
      kind: 'served',
      tokens,
      source,
      costUnits: cost,
      finishReason: this.native ? (stop === null ? null : finishReason(stop)) : this.finish_,
      upstreamId: this.upstreamId,
      lastBytes,
    };
  }
}
