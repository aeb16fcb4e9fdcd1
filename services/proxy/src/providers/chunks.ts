/**
 * OpenAI chat-completion chunks and usage built by the translating wire formats (Gemini, Bedrock),
 * as strings starting with `{"id":"…"` so the stream relay's fast id rewrite applies, and OpenAI-shaped
 * usage from token counts (what providers/openai/usage.ts reads back).
 */
import type { TokenCounts } from './wire-format';

type Json = Record<string, unknown>;

/** OpenAI `usage` for token counts (prompt includes cached and cache-write; completion includes reasoning). */
export function usageOf(t: TokenCounts): Json {
  return {
    prompt_tokens: t.prompt,
    completion_tokens: t.completion,
    total_tokens: t.prompt + t.completion,
    prompt_tokens_details: { cached_tokens: t.cached, cache_write_tokens: t.cacheWrite },
    completion_tokens_details: { reasoning_tokens: t.reasoning },
  };
}

/** One tool call of a chunk or a message. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Builds the chunks of one stream (one instance per stream). */
export class ChunkWriter {
  private head = '';
  private id = '';

  constructor(
    private readonly model: string,
    private readonly created: number,
  ) {
    this.setId('');
  }

  setId(id: string): void {
    this.id = id;
    this.head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${this.created},"model":${JSON.stringify(this.model)},"choices":[{"index":0,"delta":`;
  }

  private chunk(delta: string, finish: string | null = null): string {
    return `${this.head}${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}`;
  }

  role(): string {
    return this.chunk('{"role":"assistant","content":""}');
  }

  content(text: string): string {
    return this.chunk(`{"content":${JSON.stringify(text)}}`);
  }

  /** A tool call's start (`arguments` may be whole, or '' with the rest in `toolArguments`). */
  toolCall(index: number, call: ToolCall): string {
    const c = {
      index,
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    };
    return this.chunk(`{"tool_calls":[${JSON.stringify(c)}]}`);
  }

  toolArguments(index: number, part: string): string {
    return this.chunk(`{"tool_calls":[${JSON.stringify({ index, function: { arguments: part } })}]}`);
  }

  finish(reason: string): string {
    return this.chunk('{}', reason);
  }

  usage(usage: Json): string {
    return `{"id":${JSON.stringify(this.id)},"object":"chat.completion.chunk","created":${this.created},"model":${JSON.stringify(this.model)},"choices":[],"usage":${JSON.stringify(usage)}}`;
  }
}

/** A `chat.completion` with one choice. */
export function completionOf(
  ctx: { model: string; created: number },
  id: string,
  text: string,
  calls: ToolCall[],
  finishReason: string,
  usage: Json | null,
): Json {
  const message: Json = {
    role: 'assistant',
    content: text.length > 0 || calls.length === 0 ? text : null,
    refusal: null,
  };
  if (calls.length > 0)
    message.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  const out: Json = {
    id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
  };
  if (usage) out.usage = usage;
  return out;
}

/** `data: <chunk>\n\n` for each chunk, then `data: [DONE]` when `done`. */
export const sseText = (chunks: string[], done: boolean): string =>
  chunks.map((c) => `data: ${c}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');

/** The error data the relay turns into the §6 error chunk (`{"error": {code, message, type}}`). */
export const errorData = (code: number, message: string, type: string | null): string =>
  JSON.stringify({ error: { code, message, type } });
