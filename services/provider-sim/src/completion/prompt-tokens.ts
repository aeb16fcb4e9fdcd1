import { type CountBudget, countTextTokens, newBudget } from '@tollgate/tokens';

/**
 * The simulator's "truth" for prompt_tokens: gpt-tokenizer o200k counts plus OpenAI's documented
 * chat overhead (3 tokens per message, 1 more when a `name` is given, 3 to prime the reply).
 * Special-token text such as "<|endoftext|>" is counted as plain text, like the real API does.
 */
export const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
export const REPLY_PRIMING_TOKENS = 3;
/** An image part is billed like a low-detail image. */
export const TOKENS_PER_IMAGE = 85;

/**
 * @tollgate/tokens' count: exact o200k for ordinary text, linear-time for any input (a long run
 * without whitespace would otherwise make the simulator itself a denial-of-service target).
 */
export const countText = (text: string, budget?: CountBudget): number => countTextTokens(text, budget);

export interface SimMessage {
  role: string;
  content?: unknown;
  name?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

function contentTokens(content: unknown, budget: CountBudget): number {
  if (typeof content === 'string') return countText(content, budget);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    const p = part as { type?: unknown; text?: unknown };
    if (typeof p.text === 'string') n += countText(p.text, budget);
    else if (p.type === 'image_url') n += TOKENS_PER_IMAGE;
  }
  return n;
}

export function countPromptTokens(messages: readonly SimMessage[]): number {
  let n = REPLY_PRIMING_TOKENS;
  const budget = newBudget(); // one budget for the whole prompt, like @tollgate/tokens
  for (const m of messages) {
    n += TOKENS_PER_MESSAGE + countText(m.role, budget) + contentTokens(m.content, budget);
    if (typeof m.name === 'string') n += TOKENS_PER_NAME + countText(m.name, budget);
    if (m.tool_calls !== undefined && m.tool_calls !== null)
      n += countText(JSON.stringify(m.tool_calls), budget);
    if (typeof m.tool_call_id === 'string') n += countText(m.tool_call_id, budget);
  }
  return n;
}
