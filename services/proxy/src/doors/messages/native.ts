import { SseReader } from '../../providers/sse';
import { DeferredEvents } from '../deferred-events';

/**
 * The native path (Anthropic-format provider → Anthropic door): the provider's answer goes to the
 * client as it came; the gateway only reads the usage it bills from. In a Message, `usage`; in a
 * stream, `message_start`'s `message.usage` (input and cache figures) and `message_delta`'s `usage`
 * (cumulative; may repeat or update the input figures), plus `error` events.
 *
 * Token counts come back in the gateway's (OpenAI) semantics: prompt = input + cache read + cache
 * creation (Anthropic's `input_tokens` excludes both), cached = cache read, cacheWrite = cache creation,
 * of which cacheWrite1h = `cache_creation.ephemeral_1h_input_tokens` (the dearer 1-hour writes).
 */
type Json = Record<string, unknown>;

export interface NativeTokens {
  prompt: number;
  completion: number;
  cached: number;
  cacheWrite: number;
  cacheWrite1h: number;
  reasoning: number;
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

/** Anthropic usage fields gathered so far (a later event's number replaces an earlier one). */
class UsageFields {
  private readonly fields: Record<string, number> = {};
  private seen = false;

  add(usage: unknown): void {
    if (!isObj(usage)) return;
    for (const k of [
      'input_tokens',
      'output_tokens',
      'cache_read_input_tokens',
      'cache_creation_input_tokens',
    ]) {
      if (typeof usage[k] === 'number') {
        this.fields[k] = usage[k] as number;
        this.seen = true;
      }
    }
    const split = usage.cache_creation;
    if (isObj(split) && typeof split.ephemeral_1h_input_tokens === 'number')
      this.fields.ephemeral_1h = split.ephemeral_1h_input_tokens;
  }

  tokens(): NativeTokens | null {
    if (!this.seen) return null;
    const f = this.fields;
    const cached = count(f.cache_read_input_tokens);
    const cacheWrite = count(f.cache_creation_input_tokens);
    return {
      prompt: count(f.input_tokens) + cached + cacheWrite,
      completion: count(f.output_tokens),
      cached,
      cacheWrite,
      cacheWrite1h: Math.min(count(f.ephemeral_1h), cacheWrite),
      reasoning: 0,
    };
  }
}

/** A Message's usage as token counts, or null when it carries none. */
export function nativeMessageTokens(message: Json): NativeTokens | null {
  const u = new UsageFields();
  u.add(message.usage);
  return u.tokens();
}

/** Text content of a Message (for an estimate when it carries no usage). */
export function nativeMessageText(message: Json): string {
  if (!Array.isArray(message.content)) return '';
  let text = '';
  for (const b of message.content) {
    if (!isObj(b)) continue;
    if (typeof b.text === 'string') text += b.text;
    else if (typeof b.thinking === 'string') text += b.thinking;
    else if (b.type === 'tool_use') text += JSON.stringify(b.input ?? {});
  }
  return text;
}

/**
 * Reads a provider's Messages stream as it passes through: usage, the produced text (bounded, for an
 * estimate should the stream end without usage), the stop reason, the end and any error event.
 */
export class NativeStreamReader {
  private readonly sse = new SseReader();
  private readonly usage = new UsageFields();
  /** The provider's `message_stop` arrived. */
  done = false;
  /** The provider's `error` event, if any: its Anthropic type and message. */
  error: { type: string; message: string } | null = null;
  /** The message's `stop_reason` (from `message_delta`). */
  stopReason: string | null = null;
  /** Produced text, up to `maxText` characters, then a count of the rest (`text`, `extraChars`). */
  private keptText = '';
  private extra = 0;
  /** Text deltas, read only when the text is asked for (the provider's usage makes it moot). */
  private readonly deltas = new DeferredEvents((data) => this.read('content_block_delta', data, true));

  constructor(private readonly maxText = 32_768) {}

  /** Produced text, up to `maxText` characters. */
  get text(): string {
    this.deltas.settle();
    return this.keptText;
  }

  /** Characters produced beyond `text`. */
  get extraChars(): number {
    this.deltas.settle();
    return this.extra;
  }

  push(bytes: Uint8Array): void {
    for (const e of this.sse.push(bytes)) this.read(e.type, e.data);
  }

  end(): void {
    for (const e of this.sse.end()) this.read(e.type, e.data);
  }

  tokens(): NativeTokens | null {
    return this.usage.tokens();
  }

  private keepText(s: unknown): void {
    if (typeof s !== 'string') return;
    const room = this.maxText - this.keptText.length;
    if (room >= s.length) this.keptText += s;
    else {
      if (room > 0) this.keptText += s.slice(0, room);
      this.extra += s.length - Math.max(room, 0);
    }
  }

  /**
   * One event. Named by its `event:` line, the ones that change nothing read here (`ping`, a block's
   * start and stop) are not parsed, and text deltas are held unparsed (`deltas`) until the text is
   * needed; the others are parsed at once (usage, stop reason, the end, errors).
   */
  private read(type: string, data: string, deferred = false): void {
    if (type === 'ping' || type === 'content_block_start' || type === 'content_block_stop') return;
    if (type === 'content_block_delta' && !deferred) {
      this.deltas.add(data);
      return;
    }
    let ev: Json;
    try {
      ev = JSON.parse(data) as Json;
    } catch {
      return;
    }
    switch (type || ev.type) {
      case 'message_start':
        if (isObj(ev.message)) this.usage.add(ev.message.usage);
        return;
      case 'content_block_delta': {
        if (!deferred) this.deltas.settle(); // an untyped delta: after the held ones
        const d = isObj(ev.delta) ? ev.delta : {};
        this.keepText(d.text ?? d.thinking ?? d.partial_json);
        return;
      }
      case 'message_delta':
        this.usage.add(ev.usage);
        if (isObj(ev.delta) && typeof ev.delta.stop_reason === 'string')
          this.stopReason = ev.delta.stop_reason;
        return;
      case 'message_stop':
        this.done = true;
        return;
      case 'error': {
        const e = isObj(ev.error) ? ev.error : {};
        this.error = {
          type: typeof e.type === 'string' ? e.type : 'api_error',
          message: typeof e.message === 'string' ? e.message : 'Provider stream error',
        };
        return;
      }
      default:
    }
  }
}
