import { completionOf, type ToolCall, usageOf } from '../chunks';
import type { TokenCounts } from '../wire-format';

/**
 * Gemini `GenerateContentResponse` → chat.completion (pure). Usage (`usageMetadata`) in OpenAI terms:
 * `prompt_tokens` = promptTokenCount + toolUsePromptTokenCount (the prompt count includes the cached
 * tokens: `cached_tokens` = cachedContentTokenCount), `completion_tokens` = candidatesTokenCount +
 * thoughtsTokenCount (thinking is billed as output: `reasoning_tokens` = thoughtsTokenCount).
 * Finish reasons: STOP → stop (tool_calls when the answer calls a function), MAX_TOKENS → length,
 * the safety family (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY) →
 * content_filter; a prompt blocked before any candidate (`promptFeedback.blockReason`) is an empty
 * answer with finish_reason content_filter, billed for its prompt like the API bills it.
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

const FILTERED = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'LANGUAGE',
]);

/** Gemini `usageMetadata` → token counts, or null when it carries none. */
export function geminiTokens(meta: unknown): TokenCounts | null {
  if (!isObj(meta) || typeof meta.promptTokenCount !== 'number') return null;
  const thoughts = count(meta.thoughtsTokenCount);
  return {
    prompt: count(meta.promptTokenCount) + count(meta.toolUsePromptTokenCount),
    completion: count(meta.candidatesTokenCount) + thoughts,
    cached: count(meta.cachedContentTokenCount),
    cacheWrite: 0,
    reasoning: thoughts,
  };
}

/** A candidate's `finishReason` → OpenAI's (`calls`: the answer called a function). */
export function finishReasonOf(reason: unknown, calls: boolean): string {
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  return calls ? 'tool_calls' : 'stop';
}

let callCounter = 0;
/** A tool-call id for a function call (Gemini's calls carry an `id` only in some versions). */
const callId = (call: Json): string =>
  typeof call.id === 'string' && call.id.length > 0
    ? call.id
    : `call_${Date.now().toString(36)}${(callCounter++).toString(36)}`;

/** The visible text and function calls of a candidate's parts (thought parts are not relayed). */
export function partsOf(candidate: unknown): { text: string; calls: ToolCall[] } {
  const parts = isObj(candidate) && isObj(candidate.content) ? candidate.content.parts : undefined;
  let text = '';
  const calls: ToolCall[] = [];
  if (!Array.isArray(parts)) return { text, calls };
  for (const p of parts) {
    if (!isObj(p)) continue;
    if (typeof p.text === 'string' && p.thought !== true) text += p.text;
    else if (isObj(p.functionCall) && typeof p.functionCall.name === 'string') {
      calls.push({
        id: callId(p.functionCall),
        name: p.functionCall.name,
        arguments: JSON.stringify(p.functionCall.args ?? {}),
      });
    }
  }
  return { text, calls };
}

/** A GenerateContentResponse → chat.completion; null when it is not one. */
export function readGenerateContent(json: Json, ctx: { model: string; created: number }): Json | null {
  const candidates = json.candidates;
  const blocked = isObj(json.promptFeedback) && typeof json.promptFeedback.blockReason === 'string';
  if (!Array.isArray(candidates) && !blocked) return null;
  const first = Array.isArray(candidates) ? candidates[0] : undefined;
  const { text, calls } = partsOf(first);
  const reason =
    blocked && first === undefined
      ? 'content_filter'
      : finishReasonOf(isObj(first) ? first.finishReason : undefined, calls.length > 0);
  const tokens = geminiTokens(json.usageMetadata);
  const id = typeof json.responseId === 'string' ? json.responseId : '';
  return completionOf(ctx, id, text, calls, reason, tokens && usageOf(tokens));
}
