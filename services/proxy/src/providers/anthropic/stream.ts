import { ChunkWriter } from '../chunks';
import { type ClassifiedError, classifyStreamError } from './errors';
import { finishReason, openAiUsage } from './response';

/**
 * Anthropic Messages stream events → OpenAI chat.completion.chunk data (pure, one instance per
 * stream). The output is what an OpenAI-format provider would have sent, so the proxy's one stream
 * relay (id/model rewrite, usage held back and completed, §6 error chunk) serves both formats:
 *
 * - `message_start` → the role chunk (`delta: {role: "assistant", content: ""}`); its usage is kept;
 * - `content_block_start` of a `tool_use` block → a `tool_calls` delta (index, id, name, `arguments: ""`);
 * - `content_block_delta`: `text_delta` → a content chunk; `input_json_delta` → an `arguments`
 *   delta of that tool call (empty pieces dropped); thinking/signature deltas are not relayed;
 * - `message_delta` → the finish chunk (`stop_reason` mapped) and the cumulative usage kept;
 * - `message_stop` → the usage chunk (`choices: []`, OpenAI-shaped usage incl. cached/cache-write)
 *   when any usage was seen, then the end (`done`);
 * - `ping`, `content_block_stop` and unknown event types (Anthropic may add some) → nothing;
 * - `error` → `error` (classified) and the OpenAI-style error data `{"error": {...}}`.
 *
 * Chunks are built by the formats' one chunk writer (providers/chunks.ts `ChunkWriter`), as strings
 * starting with `{"id":"…"` so the relay's fast rewrite applies.
 */
export interface StreamRead {
  /** OpenAI chunk JSON texts to relay, in order. */
  chunks: string[];
  /** The provider said the message is complete (message_stop). */
  done: boolean;
  /** A stream error event. */
  error?: ClassifiedError;
}

type Json = Record<string, unknown>;

const NOTHING: StreamRead = Object.freeze({ chunks: [], done: false }) as StreamRead;

export class MessagesStreamReader {
  private readonly out: ChunkWriter;
  /** Anthropic's content block index → the OpenAI tool call index. */
  private readonly toolIndex = new Map<number, number>();
  private usage: Json = {};
  private sawUsage = false;

  constructor(model: string, created: number) {
    this.out = new ChunkWriter(model, created);
  }

  private keepUsage(u: unknown): void {
    if (typeof u !== 'object' || u === null) return;
    for (const [k, v] of Object.entries(u as Json)) if (typeof v === 'number') this.usage[k] = v;
    // The 1-hour share of the cache writes, priced apart (response.ts `openAiUsage`).
    const split = (u as Json).cache_creation;
    const oneHour =
      typeof split === 'object' && split !== null ? (split as Json).ephemeral_1h_input_tokens : undefined;
    if (typeof oneHour === 'number') this.usage.cache_creation_1h_input_tokens = oneHour;
    this.sawUsage = true;
  }

  /** Reads one SSE event (`type` = its `event:` field, `data` = its JSON text). */
  read(type: string, data: string): StreamRead {
    let ev: Json;
    try {
      ev = JSON.parse(data) as Json;
    } catch {
      return NOTHING;
    }
    const kind = type || (typeof ev.type === 'string' ? ev.type : '');
    switch (kind) {
      case 'message_start': {
        const m = (ev.message ?? {}) as Json;
        if (typeof m.id === 'string') this.out.setId(m.id);
        this.keepUsage(m.usage);
        return { chunks: [this.out.role()], done: false };
      }
      case 'content_block_start': {
        const block = (ev.content_block ?? {}) as Json;
        if (block.type === 'tool_use' && typeof ev.index === 'number') {
          const i = this.toolIndex.size;
          this.toolIndex.set(ev.index, i);
          const call = { id: block.id as string, name: block.name as string, arguments: '' };
          return { chunks: [this.out.toolCall(i, call)], done: false };
        }
        if (block.type === 'text' && typeof block.text === 'string' && block.text.length > 0) {
          return { chunks: [this.out.content(block.text)], done: false };
        }
        return NOTHING;
      }
      case 'content_block_delta': {
        const d = (ev.delta ?? {}) as Json;
        if (d.type === 'text_delta' && typeof d.text === 'string') {
          return { chunks: [this.out.content(d.text)], done: false };
        }
        if (
          d.type === 'input_json_delta' &&
          typeof d.partial_json === 'string' &&
          d.partial_json.length > 0
        ) {
          const i = typeof ev.index === 'number' ? this.toolIndex.get(ev.index) : undefined;
          if (i === undefined) return NOTHING;
          return { chunks: [this.out.toolArguments(i, d.partial_json)], done: false };
        }
        return NOTHING;
      }
      case 'message_delta': {
        this.keepUsage(ev.usage);
        const d = (ev.delta ?? {}) as Json;
        if (d.stop_reason === undefined || d.stop_reason === null) return NOTHING;
        return { chunks: [this.out.finish(finishReason(d.stop_reason))], done: false };
      }
      case 'message_stop': {
        const usage = this.sawUsage ? openAiUsage(this.usage) : null;
        if (!usage) return { chunks: [], done: true };
        return { chunks: [this.out.usage(usage)], done: true };
      }
      case 'error': {
        const error = classifyStreamError(ev);
        const body = {
          error: { message: error.detail ?? 'Provider stream error', type: error.providerType, code: null },
        };
        return { chunks: [JSON.stringify(body)], done: false, error };
      }
      default:
        return NOTHING; // ping, content_block_stop, and event types added later
    }
  }
}
