import { type CatalogModel, mediaPromptTokens, reasoningBudget } from '@tollgate/catalog';
import type { TokenCounts } from '../providers/wire-format';
import type { RequestMedia } from './media';
import type { CanonicalRequest } from './request';

/**
 * The upper bound billed when no usage can be had (issue 22; docs/api.md "How the bound is
 * computed"): the most the provider can have charged for the work observed, never a guess below it.
 *
 *   prompt      = min(text estimate + media at the model's bounds, context_length)
 *   cache write = the whole prompt when the request asks for caching and a write costs more than an
 *                 input token (1-hour writes at their price when it asks for `ttl: "1h"`)
 *   completion  = produced text (tokenized, rounded up) + n × the reasoning budget the request allowed,
 *                 capped at n × the output budget but never below the produced text; a completion whose
 *                 answer was never seen (non-streamed, cut or abandoned before it was read) is billed
 *                 the whole output budget: n × (max_tokens, else the model's max output)
 *   reasoning   = the reasoning part of that completion
 */

/** Prompt tokens of the request on `model`: its text estimate plus its media at the model's bounds. */
export function promptBound(model: CatalogModel, textTokens: number, media: RequestMedia): number {
  return Math.min(textTokens + mediaPromptTokens(model, media.census), model.contextLength);
}

/** The prompt part of the bound: the prompt and, when caching was asked and costs more, its writes. */
function promptPart(
  model: CatalogModel,
  textTokens: number,
  media: RequestMedia,
): Pick<TokenCounts, 'prompt' | 'cached' | 'cacheWrite' | 'cacheWrite1h'> {
  const prompt = promptBound(model, textTokens, media);
  const p = model.priceUnits;
  const oneHour = media.cacheWrite1h && p.cacheWrite1h > p.prompt && p.cacheWrite1h >= p.cacheWrite;
  const fiveMinutes = media.cacheWrite && p.cacheWrite > p.prompt;
  if (oneHour) return { prompt, cached: 0, cacheWrite: prompt, cacheWrite1h: prompt };
  if (fiveMinutes) return { prompt, cached: 0, cacheWrite: prompt };
  return { prompt, cached: 0, cacheWrite: 0 };
}

/** Output tokens one completion can have: max_tokens (capped at what the model can produce), else its max. */
function outputBudget(model: CatalogModel, request: CanonicalRequest, prompt: number): number {
  const cap = model.maxOutputTokens ?? Math.max(0, model.contextLength - prompt);
  return request.maxTokens === null ? cap : Math.min(request.maxTokens, cap);
}

export interface BoundInput {
  model: CatalogModel;
  request: CanonicalRequest;
  media: RequestMedia;
  /** The text estimate of the prompt (messages and tool definitions; @tollgate/tokens). */
  promptTextTokens: number;
  /** Tokens of the text the provider was seen producing (0 when none). */
  producedTokens: number;
  /**
   * What of the answer was seen: `stream` (what was produced is known), `none` (the provider took
   * the request but its answer was never read: the whole output budget), `prompt-only` (no provider
   * did any work beyond reading the prompt: no completion).
   */
  observed: 'stream' | 'none' | 'prompt-only';
}

/** The upper bound of what the provider can have charged (see the module comment). */
export function upperBound(b: BoundInput): TokenCounts {
  const { model, request } = b;
  const prompt = promptPart(model, b.promptTextTokens, b.media);
  if (b.observed === 'prompt-only') return { ...prompt, completion: 0, reasoning: 0 };
  const n = Math.max(1, request.n);
  const budget = n * outputBudget(model, request, prompt.prompt);
  const effort = request.body.reasoning_effort;
  const perCompletion = reasoningBudget(model, {
    effort: typeof effort === 'string' ? effort : null,
    maxTokens: request.maxTokens,
  });
  const reasoning = Math.min(n * perCompletion, budget);
  const completion =
    b.observed === 'none'
      ? Math.max(budget, b.producedTokens)
      : Math.max(b.producedTokens, Math.min(b.producedTokens + reasoning, budget));
  return { ...prompt, completion, reasoning: Math.min(reasoning, completion) };
}
