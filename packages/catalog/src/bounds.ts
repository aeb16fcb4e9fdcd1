import type { CatalogModel } from './catalog';

/**
 * What a request's media and reasoning can make a provider bill, per model (issue 22). A provider
 * counts an image or a document page as many prompt tokens as its own rule says — far more than the
 * text of the part — and a reasoning model's hidden reasoning as completion tokens; the gateway
 * reserves and, when no usage comes, bills these bounds, never a guess below them.
 */

/**
 * An image of a model that declares no `image_tokens`: the dearest per-image rule known —
 * gpt-4o-mini's (2,833 base + 5,667 per 512-px tile; high detail at most 8 tiles: 48,169; low detail
 * the base alone). Any real catalog should declare its models' own (packages/catalog/README.md).
 */
export const DEFAULT_IMAGE_TOKENS = Object.freeze({ low: 2_833, high: 48_169, auto: 48_169 });
/** The text a document page can add on top of its page image (a dense page ≈ 1,500–3,000 tokens). */
export const DOCUMENT_PAGE_TEXT_TOKENS = 3_000;
/** Pages one document can have when the model declares no `document_max_pages` (OpenAI's and Anthropic's PDF cap). */
export const DEFAULT_DOCUMENT_MAX_PAGES = 100;

export type ImageDetail = 'low' | 'high' | 'auto';

/** The media parts of one request, counted once (the proxy's prompt bound) and priced per model. */
export interface MediaCensus {
  images: Record<ImageDetail, number>;
  /** Document (file) parts: each can be as long as the model's `document_max_pages`. */
  documents: number;
}

export const emptyCensus = (): MediaCensus => ({ images: { low: 0, high: 0, auto: 0 }, documents: 0 });

/** Prompt tokens the census's media can count as on `model` (its declared bounds, else the defaults). */
export function mediaPromptTokens(model: CatalogModel, census: MediaCensus): number {
  const t = model.imageTokens;
  const { low, high, auto } = census.images;
  return (
    low * t.low +
    high * t.high +
    auto * t.auto +
    census.documents * model.documentPageTokens * model.documentMaxPages
  );
}

/** What a request says about its reasoning (the fields a provider receives). */
export interface ReasoningAsk {
  /** `reasoning_effort` as sent. */
  effort?: string | null | undefined;
  /** The larger of max_tokens / max_completion_tokens: a completion's reasoning and text together. */
  maxTokens?: number | null | undefined;
}

/**
 * The reasoning tokens one completion of `model` can bill: 0 for a model without `reasoning`; else
 * the declared budget of the request's `reasoning_effort` (when the catalog declares one), else the
 * model's declared bound; never more than the request's token limit.
 */
export function reasoningBudget(model: CatalogModel, ask: ReasoningAsk): number {
  const r = model.reasoning;
  if (r === null) return 0;
  const effort = ask.effort;
  let budget = r.maxTokens;
  if (effort === 'minimal' || effort === 'low' || effort === 'medium' || effort === 'high') {
    budget = r.effort[effort] ?? budget;
  }
  if (typeof ask.maxTokens === 'number' && ask.maxTokens > 0) budget = Math.min(budget, ask.maxTokens);
  return budget;
}
