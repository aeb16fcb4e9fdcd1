import type { CatalogModel } from './catalog';

/** Token counts of one request, OpenAI semantics: prompt includes cached and cache-write tokens, completion includes reasoning. */
export interface TokenCounts {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
  /** The part of `cacheWrite` written for one hour (Anthropic `ttl: "1h"`), priced `cacheWrite1h`. */
  cacheWrite1h?: number;
  reasoning?: number;
}

const count = (n: number | undefined) => BigInt(Math.max(0, Math.trunc(n ?? 0)));

/**
 * Exact cost in @tollgate/money units (1e-10 USD):
 * (prompt − cached − cacheWrite)·prompt + cached·cacheRead + (cacheWrite − cacheWrite1h)·cacheWrite
 * + cacheWrite1h·cacheWrite1h + completion·completion + request.
 * Reasoning tokens are already inside `completion` and are not charged twice. Cached/cache-write
 * counts larger than the prompt are clamped so the uncached part never goes negative.
 */
export function computeCost(model: CatalogModel, tokens: TokenCounts): bigint {
  const p = model.priceUnits;
  const prompt = count(tokens.prompt);
  const cached = minBig(count(tokens.cached), prompt);
  const cacheWrite = minBig(count(tokens.cacheWrite), prompt - cached);
  const cacheWrite1h = minBig(count(tokens.cacheWrite1h), cacheWrite);
  const uncached = prompt - cached - cacheWrite;
  return (
    uncached * p.prompt +
    cached * p.cacheRead +
    (cacheWrite - cacheWrite1h) * p.cacheWrite +
    cacheWrite1h * p.cacheWrite1h +
    count(tokens.completion) * p.completion +
    p.request
  );
}

/** What bounds a request's output, as the caller sent it. */
export interface OutputBound {
  /** The larger of `max_tokens` and `max_completion_tokens` when given: a provider may honour either. */
  maxTokens?: number | undefined;
  /** Number of completions (`n`), default 1: each can produce the whole output budget. */
  n?: number | undefined;
  /** The request asks for 1-hour cache writes (`cache_control.ttl: "1h"`): its price bounds the prompt too. */
  cacheWrite1h?: boolean | undefined;
}

/**
 * The most a request can cost, for reservations before forwarding:
 * promptTokens·max(prompt, cacheRead, cacheWrite[, cacheWrite1h]) + n·budget·completion + request, where budget =
 * maxTokens ?? maxOutputTokens ?? (contextLength − promptTokens). A maxTokens above what the model can
 * ever produce (maxOutputTokens, else contextLength) is capped there. Every prompt token is charged at
 * the dearest input price: whether the provider serves it from cache or writes it to cache is unknown
 * before the response, and a cache write can cost more than an uncached token.
 */
export function worstCaseCost(model: CatalogModel, promptTokens: number, bound: OutputBound = {}): bigint {
  const p = model.priceUnits;
  const prompt = count(promptTokens);
  const { maxTokens } = bound;
  const budget =
    maxTokens === undefined
      ? (model.maxOutputTokens ?? Math.max(0, model.contextLength - Number(prompt)))
      : Math.min(Number(count(maxTokens)), model.maxOutputTokens ?? model.contextLength);
  const completions = BigInt(Math.max(1, Math.trunc(bound.n ?? 1)));
  let inputPrice = maxBig(maxBig(p.prompt, p.cacheRead), p.cacheWrite);
  if (bound.cacheWrite1h) inputPrice = maxBig(inputPrice, p.cacheWrite1h);
  return prompt * inputPrice + completions * BigInt(budget) * p.completion + p.request;
}

/**
 * The most tokens a request to `model` can use (issue 29's tokens-per-minute limit): its prompt
 * bound plus `n` output budgets (`max_tokens`, else the model's output limit), as worstCaseCost.
 */
export function worstCaseTokens(model: CatalogModel, promptTokens: number, bound: OutputBound = {}): number {
  const prompt = Number(count(promptTokens));
  const { maxTokens } = bound;
  const budget =
    maxTokens === undefined
      ? (model.maxOutputTokens ?? Math.max(0, model.contextLength - prompt))
      : Math.min(Number(count(maxTokens)), model.maxOutputTokens ?? model.contextLength);
  return prompt + Math.max(1, Math.trunc(bound.n ?? 1)) * budget;
}

/**
 * Most completions one request may ask for (`n`; OpenAI's own limit, the proxy's `MAX_N`). Only
 * bounds `requestWorstCase`.
 */
const MAX_COMPLETIONS = 128;

/**
 * The most any single request to `model` can cost: a prompt filling the context window at the
 * dearest input price plus `MAX_COMPLETIONS` full output budgets. Billing refuses a usage event
 * above it (tokens no request can have produced).
 */
export function requestWorstCase(model: CatalogModel): bigint {
  const p = model.priceUnits;
  // 1-hour cache writes (issue 22) are the dearest input a request can ask for.
  const inputPrice = maxBig(maxBig(maxBig(p.prompt, p.cacheRead), p.cacheWrite), p.cacheWrite1h);
  const output = BigInt(model.maxOutputTokens ?? model.contextLength);
  return (
    BigInt(model.contextLength) * inputPrice + BigInt(MAX_COMPLETIONS) * output * p.completion + p.request
  );
}

const maxBig = (a: bigint, b: bigint) => (a > b ? a : b);
const minBig = (a: bigint, b: bigint) => (a < b ? a : b);
