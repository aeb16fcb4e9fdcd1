import type { ServerResponse as Response } from 'node:http';
import { chunkSocket, takeHead } from '../../http/http-chunk';
import { waitForClient } from '../../pipeline/backpressure';
import type { Completion } from '../../pipeline/completion';
import { finishReasonOfChunk, midStreamError, streamEndedEarly } from '../../pipeline/errors';
import type { Outcome, UsageSource } from '../../pipeline/outcome';
import { SSE_HEAD, writeSseHead } from '../../pipeline/sse-head';
import { isProviderUsage, tokensFromUsage } from '../../providers/openai/usage';
import { SseBytes, type SseEventSink } from '../../providers/sse';
import type { TokenCounts } from '../../providers/wire-format';
import type { AnswerStream } from '../door';
import { ByteOut } from './byte-out';
import { ChunkRewriter, hasFinishReason, NOT_JSON, utf8 } from './chunk';
import { ChunkScan } from './chunk-scan';
import { DONE_EVENT, errorEvent } from './events';
import { completeUsage, ProducedText } from './usage';

const KEEP_ALIVE = ': keep-alive\n\n';

type Json = Record<string, unknown>;

/** Sends a head that `StreamRelay.commitHead` left unsent (nothing was written in the meantime). */
function flushHead(relay: StreamRelay): void {
  if (!relay.wrote && !relay.res.writableEnded && !relay.res.destroyed) relay.res.flushHeaders();
}

/** Shared by every stream: each write is gathered and taken before anything awaits (byte-out.ts). */
const out = new ByteOut();
const rewriter = new ChunkRewriter();
const scan = new ChunkScan();
const DATA = 'data: ';
const EVENT_END = '\n\n';
const DONE_BYTES = Buffer.from(DONE_EVENT);

/**
 * The chat door's stream (`AnswerStream`): relays one provider event stream to the client as it arrives. Content chunks are forwarded the
 * moment their event is complete, with only `id` (and `model`) rewritten — from the provider's bytes
 * (providers/sse.ts `SseBytes`, chunk.ts `ChunkBytes`, byte-out.ts: each read's output is one Buffer, no chunk becomes
 * an output string); the usage chunk is held back, completed (cost, is_byok, zero-filled details) and
 * sent last before [DONE]. A provider error event ends the relay with the §6 error chunk.
 */
export class StreamRelay implements SseEventSink, AnswerStream {
  private readonly reader = new SseBytes();
  /** What the content chunks produced, bounded (parsed only as far as the estimate needs). */
  private readonly produced = new ProducedText();
  private usageChunk: Json | null = null;
  private lastFinishChunk: string | null = null;
  private sawDone = false;
  /** The provider's own id of the stream (its first chunk's). */
  private upstreamId: string | null = null;
  /** A provider error event arrived: stop reading. */
  terminated = false;
  lastWriteAt = Date.now();
  /** Something was written to the client (the head went out with it). */
  wrote = false;
  /**
   * Content of the provider's last read, held back to leave with the end of the answer in one write
   * (`push(bytes, true)`): the provider's stream had already ended, so nothing would follow it sooner.
   */
  private held: Buffer[] | null = null;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  /** The request id is ASCII (always, as the proxy makes them): the byte path writes it as such. */
  private readonly asciiId: boolean;
  /** The ids the rewriter puts in every chunk (made on the first one: the candidate is final by then). */
  private chunkIds: { id: string; model: string; asciiId: boolean } | null = null;

  constructor(
    private readonly c: Completion,
    readonly res: Response,
    /** How long the client may leave its socket buffer full before the stream is cut. */
    private readonly writeTimeoutMs = 30_000,
  ) {
    this.asciiId = Buffer.byteLength(c.requestId) === c.requestId.length;
  }

  /** SSE comments while nothing else is written; the first one also commits the 200 + SSE headers. */
  startKeepAlive(intervalMs: number): void {
    this.keepAliveTimer = setInterval(this.keepAlive, intervalMs, intervalMs);
    this.keepAliveTimer.unref();
  }

  private readonly keepAlive = (intervalMs: number): void => {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (Date.now() - this.lastWriteAt < intervalMs - 5) return;
    writeSseHead(this.res);
    this.write(KEEP_ALIVE);
  };

  /**
   * Commits the 200 and the SSE headers once the provider accepted the stream, sending them with the
   * first bytes written in this event-loop turn: the provider's first chunk usually arrives in the same
   * read as its headers, so the client gets head and first chunk in one write (one syscall and one
   * wake-up of the client fewer per stream). When nothing is written this turn (a slow first token),
   * the head is flushed alone right after it (setImmediate), as soon as before. The chat door reads
   * OpenAI chunks either way (its native format is OpenAI's), so `native` changes nothing here.
   */
  commitHead(_native?: boolean): void {
    if (this.res.headersSent || this.c.cancelled) return;
    this.res.writeHead(200, SSE_HEAD);
    setImmediate(flushHead, this);
  }

  stopKeepAlive(): void {
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }

  /**
   * Writes, and waits for the client to drain when its socket buffer is full (ends on disconnect).
   * A client that does not read for writeTimeoutMs is cut: the completion is cancelled and, like any
   * cancelled one, drains the provider's answer for its usage (pipeline/drain.ts).
   * `last`: the provider's stream ended with these bytes; they are held and leave with the end of
   * the answer (`finish`'s last bytes), one write instead of two — for a short answer that arrived
   * whole, the only write of the stream.
   */
  push(bytes: Buffer, last = false): Promise<void> | undefined {
    // A chunk goes straight to the client's socket, framed here, the head in front of the first one
    // if it has not left yet (http-chunk.ts).
    const socket = last || this.held !== null || this.c.cancelled ? null : chunkSocket(this.res);
    const chunk = this.relayed(bytes, false, socket !== null);
    // A cancelled completion drains (pipeline/drain.ts): the provider's bytes were read for the usage, and go nowhere.
    if (chunk === null || this.c.cancelled) return undefined;
    if (last || this.held !== null) {
      // The provider has nothing more to send: these bytes go out with the answer's end (finish),
      // which the chat route writes once the completion has ended, a few microseconds from now.
      this.stopKeepAlive();
      if (this.held === null) this.held = [chunk];
      else this.held.push(chunk);
      return undefined;
    }
    if (socket !== null) {
      this.wrote = true;
      this.lastWriteAt = Date.now();
      if (socket.write(chunk)) return undefined;
      return waitForClient(socket, this.c, this.writeTimeoutMs, this.stalled);
    }
    if (this.write(chunk)) return undefined;
    return waitForClient(this.res, this.c, this.writeTimeoutMs, this.stalled);
  }

  private readonly stalled = (): void => {
    this.c.log.warn({ writeTimeoutMs: this.writeTimeoutMs }, 'client stopped reading: stream cut');
    this.c.cancel();
    this.res.destroy();
  };

  /** Upstream body ended cleanly. */
  endOfInput(): void {
    const chunk = this.relayed(null, true);
    if (chunk !== null) {
      if (this.held !== null) this.held.push(chunk);
      else this.write(chunk);
    }
    if (!this.terminated && !this.sawDone && this.lastFinishChunk === null) {
      this.c.fail(streamEndedEarly(this.c.provider.name));
    }
  }

  /**
   * The client bytes that one read of the provider (or its end) completes, as one Buffer (`framed`: as
   * one HTTP/1.1 chunk, for the client's socket, after the head if it has not left); null: none.
   */
  private relayed(bytes: Buffer | null, end: boolean, framed = false): Buffer | null {
    try {
      if (end) this.reader.end(this);
      else this.reader.push(bytes as Buffer, this);
      return out.length === 0 ? null : framed ? out.takeChunk(takeHead(this.res)) : out.take();
    } finally {
      out.clear();
    }
  }

  private write(chunk: Buffer | string): boolean {
    if (this.c.cancelled) return true;
    this.wrote = true;
    this.lastWriteAt = Date.now();
    return this.res.write(chunk);
  }

  /**
   * One complete provider event (SseEventSink; called by the reader while `relayed` runs). A content
   * chunk is read from its bytes (chunk-scan.ts: one pass, no string of the whole event) and rewritten
   * from them; only what is kept becomes a string (its `choices` part for the estimate, the finish
   * chunk); errors, the usage chunk and layouts the byte rewrite declines take the event's text.
   */
  event(type: string, buf: Buffer, start: number, end: number): void {
    if (this.terminated) return;
    scan.scan(buf, start, end);
    if (scan.done) {
      this.sawDone = true;
      return;
    }
    if ((type === 'error' || scan.error) && this.providerError(utf8(buf, start, end), type === 'error')) {
      this.terminated = true;
      return;
    }
    if (scan.usage) {
      const emitted = this.takeUsage(utf8(buf, start, end));
      if (emitted !== null) {
        out.text(DATA);
        out.text(emitted);
        out.text(EVENT_END);
      }
      return;
    }
    const wantId = this.upstreamId === null;
    this.chunkIds ??= { id: this.c.requestId, model: this.c.model.id, asciiId: this.asciiId };
    const upstreamId = rewriter.content(buf, start, end, null, this.chunkIds, wantId, out, scan);
    // Not JSON: relayed as it came, and not content.
    if (upstreamId === NOT_JSON) return;
    if (wantId) this.upstreamId = upstreamId;
    if (scan.kept !== -1) this.produced.addKept(utf8(buf, scan.kept, end));
    if (scan.finish) this.lastFinishChunk = utf8(buf, start, end);
  }

  /** Returns true when the event is a provider error (`{"error": {...}}`), recording it. */
  private providerError(data: string, declared: boolean): boolean {
    let parsed: Json;
    try {
      parsed = JSON.parse(data) as Json;
    } catch {
      if (!declared) return false;
      parsed = { error: { message: data } };
    }
    const e = parsed.error;
    if (typeof e !== 'object' || e === null) return false;
    const err = e as Json;
    const numeric = [err.code, err.status].find((v) => typeof v === 'number' && v >= 400 && v <= 599) as
      | number
      | undefined;
    const detail = typeof err.message === 'string' && err.message.length > 0 ? err.message : null;
    const code = numeric ?? 502;
    // The client gets a summary; the provider's text goes to the generation record (and the log).
    const failure = midStreamError(code, detail, this.c.provider.name);
    this.c.fail(failure.error, failure.detail);
    this.c.log.warn({ provider: this.c.provider.name, code, detail }, 'provider error mid-stream');
    return true;
  }

  /** Holds the usage back; a chunk that also carries choices is forwarded without its usage. */
  private takeUsage(data: string): string | null {
    let chunk: Json;
    try {
      chunk = JSON.parse(data) as Json;
    } catch {
      return null;
    }
    const c = this.c;
    if (this.upstreamId === null && typeof chunk.id === 'string') this.upstreamId = chunk.id;
    this.usageChunk = chunk;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    if (choices.length === 0) return null;
    const text = rewriter.usageContent(chunk, c.requestId, c.model.id);
    this.produced.addChunk(text);
    if (hasFinishReason(text)) this.lastFinishChunk = text;
    return text;
  }

  /**
   * What the completion is billed (Completion.finish): the provider's usage, else the estimate of
   * what was produced; and the last bytes of the answer (usage chunk, error chunk if any, [DONE]),
   * unless the client is gone, which the chat route writes once the completion has ended.
   */
  finish(): Outcome {
    this.stopKeepAlive();
    const c = this.c;
    let tokens: TokenCounts;
    let source: UsageSource;
    const providerUsage = this.usageChunk?.usage;
    if (isProviderUsage(providerUsage)) {
      tokens = tokensFromUsage(providerUsage);
      source = 'provider';
    } else {
      const produced = this.produced.result();
      tokens = c.estimate(produced.text, produced.overflowBytes);
      source = 'estimated';
    }
    const cost = c.cost(tokens);
    let lastBytes: Buffer | null = null;
    if (!c.cancelled && !this.res.writableEnded && !this.res.destroyed) {
      const usageChunk = {
        ...(this.usageChunk ?? { object: 'chat.completion.chunk', created: Math.floor(c.startedAt / 1000) }),
        id: c.requestId,
        model: c.model.id,
        provider: c.provider.name,
        choices: [],
        usage: completeUsage(providerUsage, tokens, cost),
      };
      try {
        for (const chunk of this.held ?? []) out.whole(chunk);
        out.text(`data: ${JSON.stringify(usageChunk)}\n\n`);
        if (c.error) out.text(errorEvent(c.error, c.provider.name));
        out.whole(DONE_BYTES);
        lastBytes = out.take();
      } finally {
        out.clear();
      }
    }
    this.held = null;
    return {
      kind: 'served',
      tokens,
      source,
      costUnits: cost,
      finishReason: this.lastFinishChunk === null ? null : finishReasonOfChunk(this.lastFinishChunk),
      upstreamId: this.upstreamId,
      lastBytes,
    };
  }
}
