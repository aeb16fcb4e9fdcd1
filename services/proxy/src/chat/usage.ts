import { toNumber } from '@tollgate/money';

/** Token counts of one request, OpenAI semantics: prompt includes cached and cache-write, completion includes reasoning. */
export interface TokenCounts {
  prompt: number;
  completion: number;
  cached: number;
  cacheWrite: number;
  reasoning: number;
}

type Json = Record<string, unknown>;

const count = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};

/** Reads a provider usage object (OpenAI shape, plus the cache-write spellings seen in the wild). */
export function tokensFromUsage(usage: unknown): TokenCounts {
  const u = obj(usage);
  const pd = obj(u.prompt_tokens_details);
  const cd = obj(u.completion_tokens_details);
  return {
    prompt: count(u.prompt_tokens),
    completion: count(u.completion_tokens),
    cached: count(pd.cached_tokens),
    cacheWrite: count(pd.cache_write_tokens ?? u.cache_creation_input_tokens),
    reasoning: count(cd.reasoning_tokens),
  };
}

/** A usage object of the provider is worth using when it carries real counts. */
export const isProviderUsage = (usage: unknown): boolean =>
  typeof obj(usage).prompt_tokens === 'number' && typeof obj(usage).completion_tokens === 'number';

/**
 * The usage object of spec §2.4: the provider's object (extra fields kept) completed with cost,
 * is_byok and zero-filled details.
 */
export function completeUsage(providerUsage: unknown, tokens: TokenCounts, costUnits: bigint): Json {
  const u = obj(providerUsage);
  return {
    ...u,
    prompt_tokens: tokens.prompt,
    completion_tokens: tokens.completion,
    total_tokens: tokens.prompt + tokens.completion,
    prompt_tokens_details: {
      ...obj(u.prompt_tokens_details),
      cached_tokens: tokens.cached,
      cache_write_tokens: tokens.cacheWrite,
    },
    completion_tokens_details: { ...obj(u.completion_tokens_details), reasoning_tokens: tokens.reasoning },
    cost: toNumber(costUnits),
    is_byok: false,
  };
}

/** The text a streamed response produced so far, from the raw content chunks (parsed only when needed). */
export function streamedText(rawChunks: readonly string[]): string {
  let text = '';
  for (const raw of rawChunks) {
    let chunk: Json;
    try {
      chunk = obj(JSON.parse(raw));
    } catch {
      continue;
    }
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) text += deltaText(obj(obj(choice).delta));
  }
  return text;
}

/** The text of a non-streamed response's choices (content, reasoning, tool call arguments). */
export function messageText(response: Json): string {
  let text = '';
  const choices = Array.isArray(response.choices) ? response.choices : [];
  for (const choice of choices) text += deltaText(obj(obj(choice).message));
  return text;
}

function deltaText(d: Json): string {
  let text = '';
  if (typeof d.content === 'string') text += d.content;
  if (typeof d.reasoning === 'string') text += d.reasoning;
  if (typeof d.reasoning_content === 'string') text += d.reasoning_content;
  if (typeof d.refusal === 'string') text += d.refusal;
  if (Array.isArray(d.tool_calls)) {
    for (const call of d.tool_calls) {
      const fn = obj(obj(call).function);
      if (typeof fn.name === 'string') text += fn.name;
      if (typeof fn.arguments === 'string') text += fn.arguments;
    }
  }
  return text;
}
