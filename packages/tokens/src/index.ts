import { countTokens } from 'gpt-tokenizer';

/**
 * Conservative token estimates for billing when a provider reports no usage, and for worst-case
 * reservations before forwarding. Base count: gpt-tokenizer o200k (GPT-4o family) plus OpenAI's
 * chat overhead (3 tokens per message, +1 with `name`, +3 to prime the reply); the estimate then adds
 * a safety margin (5%, rounded up) so it is never below the count of an OpenAI-family tokenizer and
 * leaves room for tokenizers that split text a little finer.
 */

/** Safety margin applied to exact counts: estimate = exact + ceil(exact × 5 / 100). */
export const SAFETY_MARGIN_PERCENT = 5;
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const REPLY_PRIMING_TOKENS = 3;
/** An image part counts as a high-detail 1024×1024 image (OpenAI: 85 + 4 tiles × 170). */
export const TOKENS_PER_IMAGE = 765;

const AS_TEXT = { disallowedSpecial: new Set<string>() };

// Prompts repeat (system prompts, chat history re-sent every turn): cache counts of short texts.
const cache = new Map<string, number>();
// Bounded: at most 2,000 texts of up to 4,096 chars (≤ 16 MB).
const CACHE_MAX_ENTRIES = 2_000;
const CACHE_MAX_TEXT = 4_096;

/** Exact o200k token count of a text; special-token text ("<|endoftext|>") counts as plain text. */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length > CACHE_MAX_TEXT) return countTokens(text, AS_TEXT);
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const n = countTokens(text, AS_TEXT);
  if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
  cache.set(text, n);
  return n;
}

export interface ContentPart {
  type?: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatMessageLike {
  role: string;
  content?: string | readonly ContentPart[] | null;
  name?: string;
  tool_calls?: unknown;
  tool_call_id?: string;
  [key: string]: unknown;
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countTextTokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as ContentPart;
    if (typeof p.text === 'string') n += countTextTokens(p.text);
    else if (p.type === 'image_url' || p.type === 'input_image' || p.type === 'image') n += TOKENS_PER_IMAGE;
    else n += countTextTokens(JSON.stringify(p)); // unknown part kinds: count their JSON
  }
  return n;
}

/** Exact prompt count with OpenAI's chat overhead, before the safety margin. */
export function countPromptTokens(messages: readonly ChatMessageLike[]): number {
  let n = REPLY_PRIMING_TOKENS;
  for (const m of messages) {
    n += TOKENS_PER_MESSAGE + countTextTokens(String(m.role)) + contentTokens(m.content);
    if (typeof m.name === 'string') n += TOKENS_PER_NAME + countTextTokens(m.name);
    if (m.tool_calls !== undefined && m.tool_calls !== null)
      n += countTextTokens(JSON.stringify(m.tool_calls));
    if (typeof m.tool_call_id === 'string') n += countTextTokens(m.tool_call_id);
  }
  return n;
}

/** exact + 5%, rounded up, in integer arithmetic. */
const withMargin = (exact: number): number => exact + Math.ceil((exact * SAFETY_MARGIN_PERCENT) / 100);

/** Conservative prompt estimate for `messages` (content: string or parts with `text`). */
export const estimatePromptTokens = (messages: readonly ChatMessageLike[]): number =>
  withMargin(countPromptTokens(messages));

/** Conservative estimate of the tokens of generated text (e.g. what a cut stream delivered). */
export const estimateCompletionTokens = (text: string): number => withMargin(countTextTokens(text));
