import { completionOf, type ToolCall, usageOf } from '../chunks';
import type { TokenCounts } from '../wire-format';

/**
 * Bedrock Converse answer → chat.completion (pure). Usage: Converse's `inputTokens` excludes the
 * cache's tokens, so `prompt_tokens` = inputTokens + cacheReadInputTokens + cacheWriteInputTokens
 * (`cached_tokens`, `cache_write_tokens`), `completion_tokens` = outputTokens. Stop reasons: end_turn,
 * stop_sequence → stop; max_tokens, model_context_window_exceeded → length; tool_use → tool_calls;
 * guardrail_intervened, content_filtered → content_filter.
 */
type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;

export function converseTokens(usage: unknown): TokenCounts | null {
  if (!isObj(usage) || typeof usage.inputTokens !== 'number') return null;
  const cached = count(usage.cacheReadInputTokens);
  const cacheWrite = count(usage.cacheWriteInputTokens);
  return {
    prompt: count(usage.inputTokens) + cached + cacheWrite,
    completion: count(usage.outputTokens),
    cached,
    cacheWrite,
    reasoning: 0,
  };
}

export function finishReasonOf(stopReason: unknown): string {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/** A Converse answer → chat.completion; null when it is not one. */
export function readConverse(json: Json, ctx: { model: string; created: number }): Json | null {
  const message = isObj(json.output) ? json.output.message : undefined;
  if (!isObj(message) || !Array.isArray(message.content)) return null;
  let text = '';
  const calls: ToolCall[] = [];
  for (const b of message.content) {
    if (!isObj(b)) continue;
    if (typeof b.text === 'string') text += b.text;
    else if (isObj(b.toolUse) && typeof b.toolUse.name === 'string')
      calls.push({
        id: String(b.toolUse.toolUseId ?? ''),
        name: b.toolUse.name,
        arguments: JSON.stringify(b.toolUse.input ?? {}),
      });
  }
  const tokens = converseTokens(json.usage);
  return completionOf(ctx, '', text, calls, finishReasonOf(json.stopReason), tokens && usageOf(tokens));
}
