export {
  DEFAULT_DOCUMENT_MAX_PAGES,
  DEFAULT_IMAGE_TOKENS,
  DOCUMENT_PAGE_TEXT_TOKENS,
  emptyCensus,
  type ImageDetail,
  type MediaCensus,
  mediaPromptTokens,
  reasoningBudget,
} from './bounds';
export type {
  Catalog,
  CatalogFormat,
  CatalogModel,
  CatalogProvider,
  EmbeddingLimits,
  ImageTokens,
  ModelPricing,
  OutputModality,
  ParseCatalogOptions,
  ReasoningBound,
  WireFormatName,
} from './catalog';
export { CatalogError, loadCatalog, parseCatalog } from './catalog';
export type { TokenCounts } from './cost';
export { computeCost, type OutputBound, requestWorstCase, worstCaseCost, worstCaseTokens } from './cost';
export { substituteEnv } from './env';
export type { ModelsEntry } from './models-entry';
export { toModelEndpoints, toModelsEntry } from './models-entry';
export { DEFAULT_SUPPORTED_PARAMETERS } from './schema';
