import type { CatalogModel } from './catalog';

/** One item of GET /models (DESIGN.md): prices are USD-per-token decimal strings. */
export interface ModelsEntry {
  id: string;
  name: string;
  created: number;
  description: string;
  context_length: number;
  pricing: {
    prompt: string;
    completion: string;
    input_cache_read: string;
    input_cache_write: string;
    request: string;
  };
  top_provider: {
    context_length: number;
    max_completion_tokens: number | null;
    is_moderated: boolean;
  };
  supported_parameters: string[];
}

export function toModelsEntry(model: CatalogModel): ModelsEntry {
  return {
    id: model.id,
    name: model.name,
    created: model.created,
    description: model.description,
    context_length: model.contextLength,
    pricing: {
      prompt: model.pricing.prompt,
      completion: model.pricing.completion,
      input_cache_read: model.pricing.cacheRead,
      input_cache_write: model.pricing.cacheWrite,
      request: model.pricing.request,
    },
    top_provider: {
      context_length: model.contextLength,
      max_completion_tokens: model.maxOutputTokens ?? null,
      is_moderated: false,
    },
    supported_parameters: [...model.supportedParameters],
  };
}
