import {
  MEDIA_PART_TYPES,
  REPLY_PRIMING_TOKENS,
  SAFETY_MARGIN_PERCENT,
  TOKENS_PER_MESSAGE,
  TOKENS_PER_NAME,
} from '@tollgate/tokens';
import type { TokenEstimator } from './completion-init';

/**
 * Prompt tokens for the spend admission, without making the event loop pay for long prompts.
 *
 * Tokenizing is linear in the prompt and synchronous: ~0.2 ms for 650 tokens but ~2 ms for 6k and
 * ~8 ms for 60k tokens, during which every other request of this process waits. So prompts up to
 * EXACT_LIMIT characters in all the fields the estimate reads get the exact estimate
 * (@tollgate/tokens, cached for repeated system prompts; itself linear-time and budgeted, so even a
 * prompt made of one unbroken run stays cheap); longer ones get an upper bound that costs one Buffer.byteLength per string:
 * a BPE token always covers at least one byte, so UTF-8 bytes (+ the same per-message overhead and
 * safety margin) can never be below the estimate. The exact estimate, when billing needs it (no
 * provider usage), is computed lazily at the end of the request.
 */
export const EXACT_LIMIT = 8_192;

interface MessageLike {
  role: unknown;
  content?: unknown;
  name?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * Characters the exact estimate would tokenize: every field it reads (role, name, tool_call_id,
 * content strings and parts, tool calls), so no field can smuggle a long text past the size check.
 * Stops counting once the limit is passed.
 */
function textLength(messages: readonly MessageLike[]): number {
  let n = 0;
  const str = (v: unknown) => (typeof v === 'string' ? v.length : 0);
  for (const m of messages) {
    if (n > EXACT_LIMIT) return n;
    n += str(m.role) + str(m.name) + str(m.tool_call_id);
    const c = m.content;
    if (typeof c === 'string') n += c.length;
    else if (Array.isArray(c)) {
      for (const part of c) {
        const text = (part as { text?: unknown } | null)?.text;
        n += typeof text === 'string' ? text.length : EXACT_LIMIT; // unusual parts: take the bound path
      }
    }
    if (m.tool_calls !== undefined && m.tool_calls !== null) n += EXACT_LIMIT;
  }
  return n;
}

/** UTF-8 byte count standing in for the token count (never below it), with the estimate's overheads. */
export function promptTokenBound(messages: readonly MessageLike[], toolsJson: string | null = null): number {
  let n = REPLY_PRIMING_TOKENS + (toolsJson === null ? 0 : bytes(toolsJson));
  for (const m of messages) {
    n += TOKENS_PER_MESSAGE + bytes(String(m.role));
    const c = m.content;
    if (typeof c === 'string') n += bytes(c);
    else if (Array.isArray(c)) {
      for (const part of c) {
        if (part === null || typeof part !== 'object') continue;
        const p = part as { type?: unknown; text?: unknown };
        if (typeof p.text === 'string') n += bytes(p.text);
        else if (typeof p.type === 'string' && MEDIA_PART_TYPES.has(p.type))
          continue; // media.ts, per model
        else n += bytes(JSON.stringify(p));
      }
    }
    if (typeof m.name === 'string') n += TOKENS_PER_NAME + bytes(m.name);
    if (m.tool_calls !== undefined && m.tool_calls !== null) n += bytes(JSON.stringify(m.tool_calls));
    if (typeof m.tool_call_id === 'string') n += bytes(m.tool_call_id);
  }
  return n + Math.ceil((n * SAFETY_MARGIN_PERCENT) / 100);
}

/**
 * Admission figure for the messages and the tool definitions' JSON: the exact estimate for short
 * prompts (also returned for reuse), else the bound.
 */
export function admissionPromptTokens(
  messages: readonly MessageLike[],
  toolsJson: string | null,
  estimator: TokenEstimator,
): { tokens: number; exact: number | null } {
  if (textLength(messages) + (toolsJson?.length ?? 0) <= EXACT_LIMIT) {
    const exact = estimator.estimatePromptTokens(messages, toolsJson);
    return { tokens: exact, exact };
  }
  return { tokens: promptTokenBound(messages, toolsJson), exact: null };
}
