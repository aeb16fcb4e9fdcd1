/**
 * The canonical answer (an OpenAI `chat.completion`) → an Anthropic Message, for requests served by
 * an OpenAI-format provider. Usage in Anthropic's terms: `input_tokens` excludes cached and
 * cache-written tokens (OpenAI's `prompt_tokens` includes them).
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

export type StopReason = 'end_turn' | 'max_tokens' | 'tool_use' | 'refusal';

/** OpenAI `finish_reason` → Anthropic `stop_reason` (`stop` and anything unknown → `end_turn`). */
export function stopReasonOf(finish: unknown): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** Token counts (OpenAI semantics: prompt includes cached and cache-write) → Anthropic `usage`. */
export function anthropicUsage(t: {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
}): Json {
  const cached = count(t.cached);
  const cacheWrite = count(t.cacheWrite);
  return {
    input_tokens: Math.max(0, count(t.prompt) - cached - cacheWrite),
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cached,
    output_tokens: count(t.completion),
  };
}

/**
 * A tool call's `arguments` as a tool_use `input`: the JSON object it holds; arguments that are not a
 * JSON object (a provider's broken output) become `{}` (docs/api.md) — Anthropic's input is an object.
 */
function toolInput(args: unknown): Json {
  if (typeof args !== 'string' || args.length === 0) return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}

/** Reasoning text an OpenAI-compatible provider returns beside the content (`reasoning` or `reasoning_content`). */
export function reasoningText(m: Json): string {
  if (typeof m.reasoning === 'string') return m.reasoning;
  if (typeof m.reasoning_content === 'string') return m.reasoning_content;
  return '';
}

export interface MessageContext {
  id: string;
  model: string;
  tokens: { prompt: number; completion: number; cached?: number; cacheWrite?: number };
}

/** A chat.completion (first choice) → an Anthropic Message. */
export function toAnthropicMessage(completion: Json, ctx: MessageContext): Json {
  const choice =
    Array.isArray(completion.choices) && isObj(completion.choices[0]) ? completion.choices[0] : {};
  const m = isObj(choice.message) ? choice.message : {};
  const content: Json[] = [];
  const thinking = reasoningText(m);
  // Reasoning an OpenAI-format provider shows has no Anthropic signature (empty: it cannot be verified).
  if (thinking.length > 0) content.push({ type: 'thinking', thinking, signature: '' });
  if (typeof m.content === 'string' && m.content.length > 0)
    content.push({ type: 'text', text: m.content, citations: null });
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls) {
      if (!isObj(call) || !isObj(call.function)) continue;
      content.push({
        type: 'tool_use',
        id: String(call.id ?? ''),
        name: String(call.function.name ?? ''),
        input: toolInput(call.function.arguments),
      });
    }
  }
  return {
    id: ctx.id,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content,
    stop_reason: stopReasonOf(choice.finish_reason),
    stop_sequence: null,
    usage: anthropicUsage(ctx.tokens),
  };
}
