/**
 * Usage in the OpenAI shape, which every adapter hands back (providers/anthropic/response.ts
 * converts Anthropic's): what the proxy meters and prices.
 */
import type { TokenCounts } from '../wire-format';

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
    cacheWrite1h: count(pd.cache_write_1h_tokens),
    reasoning: count(cd.reasoning_tokens),
  };
}

/** A usage object of the provider is worth using when it carries real counts. */
export const isProviderUsage = (usage: unknown): boolean =>
  typeof obj(usage).prompt_tokens === 'number' && typeof obj(usage).completion_tokens === 'number';
