import type { CatalogModel } from './catalog';

/** Token counts of one request, OpenAI semantics: prompt includes cached and cache-write tokens, completion includes reasoning. */
export interface TokenCounts {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
  reasoning?: number;
}

const count = (n: number | undefined) => BigInt(Math.max(0, Math.trunc(n ?? 0)));

/**
 * Exact cost in @tollgate/money units (1e-10 USD):
 * (prompt − cached − cacheWrite)·prompt + cached·cacheRead + cacheWrite·cacheWrite + completion·completion + request.
 * Reasoning tokens are already inside `completion` and are not charged twice. Cached/cache-write
 * counts larger than the prompt are clamped so the uncached part never goes negative.
 */
export function computeCost(model: CatalogModel, tokens: TokenCounts): bigint {
  const p = model.priceUnits;
  const prompt = count(tokens.prompt);
  const cached = minBig(count(tokens.cached), prompt);
  const cacheWrite = minBig(count(tokens.cacheWrite), prompt - cached);
  const uncached = prompt - cached - cacheWrite;
  return (
    uncached * p.prompt +
    cached * p.cacheRead +
    cacheWrite * p.cacheWrite +
    count(tokens.completion) * p.completion +
    p.request
  );
}

/**
 * The most a request can cost, for reservations before forwarding:
 * promptTokens·prompt + budget·completion + request, where budget = maxTokens ?? maxOutputTokens ??
 * (contextLength − promptTokens). A maxTokens above what the model can ever produce
 * (maxOutputTokens, else contextLength) is capped there. Prompt tokens are charged at the full prompt
 * price (cache discounts are unknown before the response).
 */
export function worstCaseCost(
  model: CatalogModel,
  promptTokens: number,
  maxTokens: number | undefined,
): bigint {
  const prompt = count(promptTokens);
  const budget =
    maxTokens === undefined
      ? (model.maxOutputTokens ?? Math.max(0, model.contextLength - Number(prompt)))
      : Math.min(Number(count(maxTokens)), model.maxOutputTokens ?? model.contextLength);
  return (
    prompt * model.priceUnits.prompt + BigInt(budget) * model.priceUnits.completion + model.priceUnits.request
  );
}

const minBig = (a: bigint, b: bigint) => (a < b ? a : b);
