export type {
  Catalog,
  CatalogFormat,
  CatalogModel,
  CatalogProvider,
  EmbeddingLimits,
  ModelPricing,
  OutputModality,
  ParseCatalogOptions,
  WireFormatName,
} from './catalog';
export { CatalogError, loadCatalog, parseCatalog } from './catalog';
export type { TokenCounts } from './cost';
export { computeCost, type OutputBound, requestWorstCase, worstCaseCost } from './cost';
export { substituteEnv } from './env';
export type { ModelsEntry } from './models-entry';
export { toModelEndpoints, toModelsEntry } from './models-entry';
export { DEFAULT_SUPPORTED_PARAMETERS } from './schema';
