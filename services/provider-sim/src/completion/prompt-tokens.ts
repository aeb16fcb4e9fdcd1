import { countTokens } from 'gpt-tokenizer';

/**
 * The simulator's "truth" for prompt_tokens: gpt-tokenizer o200k counts plus OpenAI's documented
 * chat overhead (3 tokens per message, 1 more when a `name` is given, 3 to prime the reply).
 * Special-token text such as "<|endoftext|>" is counted as plain text, like the real API does.
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const REPLY_PRIMING_TOKENS = 3;
/** An image part is billed like a low-detail image. */
export const TOKENS_PER_IMAGE = 85;

const cache = new Map<string, number>();
const CACHE_MAX_ENTRIES = 2_000;
const CACHE_MAX_TEXT = 4_096;

export function countText(text: string): number {
  if (text.length === 0) return 0;
  if (text.length > CACHE_MAX_TEXT) return countTokens(text, AS_TEXT);
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  const n = countTokens(text, AS_TEXT);
  if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
  cache.set(text, n);
  return n;
}

export interface SimMessage {
  role: string;
  content?: unknown;
  name?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countText(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as { type?: unknown; text?: unknown };
    if (typeof p.text === 'string') n += countText(p.text);
    else if (p.type === 'image_url') n += TOKENS_PER_IMAGE;
  }
  return n;
}

export function countPromptTokens(messages: readonly SimMessage[]): number {
  let n = REPLY_PRIMING_TOKENS;
  for (const m of messages) {
    n += TOKENS_PER_MESSAGE + countText(m.role) + contentTokens(m.content);
    if (typeof m.name === 'string') n += TOKENS_PER_NAME + countText(m.name);
    if (m.tool_calls !== undefined && m.tool_calls !== null) n += countText(JSON.stringify(m.tool_calls));
    if (typeof m.tool_call_id === 'string') n += countText(m.tool_call_id);
  }
  return n;
}
