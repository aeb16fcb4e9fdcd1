/**
 * Anthropic Messages response → OpenAI-shaped chat completion (pure). The usage comes back in the
 * OpenAI shape the proxy meters (`tokensFromUsage`): Anthropic's `input_tokens` excludes cached and
 * cache-written tokens, so `prompt_tokens` = input + cache_read + cache_creation, with
 * `prompt_tokens_details.cached_tokens` = cache_read_input_tokens and `cache_write_tokens` =
 * cache_creation_input_tokens (its 1-hour share, `cache_creation.ephemeral_1h_input_tokens`, as
 * `cache_write_1h_tokens`); `completion_tokens` = output_tokens.
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

/** Anthropic `usage` → OpenAI `usage`; null when the object carries no counts. */
export function openAiUsage(usage: unknown): Json | null {
  if (!isObj(usage) || (typeof usage.input_tokens !== 'number' && typeof usage.output_tokens !== 'number')) {
    return null;
  }
  const cached = count(usage.cache_read_input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens);
  // The 1-hour share of the cache writes (priced apart): `cache_creation.ephemeral_1h_input_tokens`,
  // or the stream reader's flat copy of it.
  const split = isObj(usage.cache_creation) ? usage.cache_creation : {};
  const cacheWrite1h = Math.min(
    cacheWrite,
    count(split.ephemeral_1h_input_tokens ?? usage.cache_creation_1h_input_tokens),
  );
  const prompt = count(usage.input_tokens) + cached + cacheWrite;
  const completion = count(usage.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: {
      cached_tokens: cached,
      cache_write_tokens: cacheWrite,
      ...(cacheWrite1h > 0 ? { cache_write_1h_tokens: cacheWrite1h } : {}),
    },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

/** Anthropic `stop_reason` → OpenAI `finish_reason`. */
export function finishReason(stopReason: unknown): string {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop'; // end_turn, stop_sequence, pause_turn
  }
}

/** A tool_use block as an OpenAI tool call. */
const toolCall = (block: Json) => ({
  id: block.id,
  type: 'function',
  function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
});

export interface ReadContext {
  /** The model id the client sees. */
  model: string;
  /** Unix seconds. */
  created: number;
}

/**
 * A Message → a `chat.completion` (one choice). Text blocks are joined; tool_use blocks become
 * `tool_calls`; thinking blocks are not relayed. `usage` is omitted when the provider sent none (the
 * proxy then estimates). Returns null when `message` is not a Message.
 */
export function readMessage(message: unknown, ctx: ReadContext): Json | null {
  if (!isObj(message) || message.type !== 'message' || !Array.isArray(message.content)) return null;
  let text = '';
  const calls: Json[] = [];
  for (const block of message.content) {
    if (!isObj(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use') calls.push(toolCall(block));
  }
  const msg: Json = {
    role: 'assistant',
    content: text.length > 0 || calls.length === 0 ? text : null,
    refusal: null,
  };
  if (calls.length > 0) msg.tool_calls = calls;
  const out: Json = {
    id: typeof message.id === 'string' ? message.id : '',
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message: msg, logprobs: null, finish_reason: finishReason(message.stop_reason) }],
  };
  const usage = openAiUsage(message.usage);
  if (usage) out.usage = usage;
  return out;
}
