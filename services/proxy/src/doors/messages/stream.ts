import { anthropicUsage, reasoningText, type StopReason, stopReasonOf } from './response';

/**
 * OpenAI chat.completion.chunk objects → Anthropic's Messages stream events (one instance per
 * stream; pure, returns SSE text): `message_start`; per content block `content_block_start`, its
 * deltas (`text_delta`, `thinking_delta`, `input_json_delta` for a tool call's arguments) and
 * `content_block_stop` when the next block starts or the message ends; then `message_delta` with the
 * stop reason and the usage, and `message_stop`. A failure mid-stream is an `error` event.
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const sseEvent = (type: string, data: unknown): string =>
  `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

type Open = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; call: number };

/**
 * The fixed parts of the per-delta events, written around the index and the delta's JSON string: the
 * same bytes as `sseEvent` of the object (issue 30: no object and no object serialisation per delta).
 */
const DELTA_HEAD = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":';
const DELTA_FIELD = {
  text: ',"delta":{"type":"text_delta","text":',
  thinking: ',"delta":{"type":"thinking_delta","thinking":',
  input_json: ',"delta":{"type":"input_json_delta","partial_json":',
} as const;
const DELTA_END = '}}\n\n';
const STOP_HEAD = 'event: content_block_stop\ndata: {"type":"content_block_stop","index":';
const STOP_END = '}\n\n';
const NO_DELTA: Json = {};

export class MessagesEventWriter {
  private index = -1;
  private open: Open | null = null;
  private stopReason: StopReason | null = null;
  /** OpenAI tool-call index → the content block it opened. */
  private readonly calls = new Map<number, number>();

  constructor(
    private readonly id: string,
    private readonly model: string,
  ) {}

  /** `message_start`: the message with no content yet (its usage arrives with `message_delta`). */
  start(): string {
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 0,
      },
    };
    return sseEvent('message_start', { type: 'message_start', message });
  }

  private close(): string {
    if (this.open === null) return '';
    this.open = null;
    return `${STOP_HEAD}${this.index}${STOP_END}`;
  }

  private begin(open: Open, block: Json): string {
    const out = this.close();
    this.index++;
    this.open = open;
    return `${out}${sseEvent('content_block_start', { type: 'content_block_start', index: this.index, content_block: block })}`;
  }

  private delta(kind: keyof typeof DELTA_FIELD, value: string): string {
    return `${DELTA_HEAD}${this.index}${DELTA_FIELD[kind]}${JSON.stringify(value)}${DELTA_END}`;
  }

  private text(kind: 'text' | 'thinking', text: string): string {
    let out = '';
    if (this.open?.kind !== kind)
      out += this.begin(
        { kind },
        kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' },
      );
    return out + this.delta(kind, text);
  }

  private toolCall(call: Json): string {
    const i = typeof call.index === 'number' ? call.index : 0;
    const fn = isObj(call.function) ? call.function : {};
    let out = '';
    if (!this.calls.has(i)) {
      this.calls.set(i, this.index + 1);
      out += this.begin(
        { kind: 'tool', call: i },
        { type: 'tool_use', id: String(call.id ?? ''), name: String(fn.name ?? ''), input: {} },
      );
    } else if (!(this.open?.kind === 'tool' && this.open.call === i)) return ''; // a late piece of an earlier call
    if (typeof fn.arguments === 'string' && fn.arguments.length > 0)
      out += this.delta('input_json', fn.arguments);
    return out;
  }

  /** One chunk's deltas as events ('' when it carries none, e.g. the usage chunk or the role chunk). */
  chunk(json: Json): string {
    const choice = Array.isArray(json.choices) && isObj(json.choices[0]) ? json.choices[0] : null;
    if (choice === null) return '';
    const d = isObj(choice.delta) ? choice.delta : NO_DELTA;
    let out = '';
    const thinking = reasoningText(d);
    if (thinking.length > 0) out += this.text('thinking', thinking);
    if (typeof d.content === 'string' && d.content.length > 0) out += this.text('text', d.content);
    if (Array.isArray(d.tool_calls))
      for (const call of d.tool_calls) if (isObj(call)) out += this.toolCall(call);
    if (choice.finish_reason !== null && choice.finish_reason !== undefined)
      this.stopReason = stopReasonOf(choice.finish_reason);
    return out;
  }

  /** The end: the open block closed, `message_delta` (stop reason, usage) and `message_stop`. */
  finish(tokens: { prompt: number; completion: number; cached?: number; cacheWrite?: number }): string {
    return (
      this.close() +
      sseEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: this.stopReason ?? 'end_turn', stop_sequence: null },
        usage: anthropicUsage(tokens),
      }) +
      sseEvent('message_stop', { type: 'message_stop' })
    );
  }
}
