import type { CatalogModel } from './catalog';

/**
 * One item of GET /models (DESIGN.md) in OpenRouter's model shape (what `@openrouter/sdk` parses):
 * prices are USD-per-token decimal strings. Fields for concepts the catalog does not describe carry
 * neutral values (docs/api.md lists them): no default parameters, per-request limits or voices.
 */
export interface ModelsEntry {
  id: string;
  canonical_slug: string;
  architecture: ModelArchitecture;
  default_parameters: null;
  links: { details: string };
  per_request_limits: null;
  supported_voices: null;
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

/** Text in; text out (chat models) or embeddings out (embedding models, catalog `output_modalities`). */
export interface ModelArchitecture {
  modality: 'text->text' | 'text->embeddings';
  input_modalities: ['text'];
  output_modalities: Array<'text' | 'embeddings'>;
  instruct_type: null;
}

const architecture = (model: CatalogModel): ModelArchitecture => ({
  modality: model.embeddings ? 'text->embeddings' : 'text->text',
  input_modalities: ['text'],
  output_modalities: [...model.outputModalities],
  instruct_type: null,
});

const pricingOf = (model: CatalogModel) => ({
  prompt: model.pricing.prompt,
  completion: model.pricing.completion,
  input_cache_read: model.pricing.cacheRead,
  input_cache_write: model.pricing.cacheWrite,
  request: model.pricing.request,
});

export function toModelsEntry(model: CatalogModel): ModelsEntry {
  return {
    id: model.id,
    canonical_slug: model.id,
    architecture: architecture(model),
    default_parameters: null,
    links: { details: `/api/v1/models/${model.id}/endpoints` },
    per_request_limits: null,
    supported_voices: null,
    name: model.name,
    created: model.created,
    description: model.description,
    context_length: model.contextLength,
    pricing: pricingOf(model),
    top_provider: {
      context_length: model.contextLength,
      max_completion_tokens: model.maxOutputTokens ?? null,
      is_moderated: false,
    },
    supported_parameters: [...model.supportedParameters],
  };
}

/**
 * GET /models/{author}/{slug}/endpoints in OpenRouter's shape: one endpoint per catalog provider of
 * the model, in order of preference. Tollgate measures no latency, throughput or uptime per endpoint
 * and knows no quantization, so those are null (docs/api.md).
 */
export function toModelEndpoints(model: CatalogModel) {
  const toolChoice = model.supportedParameters.includes('tool_choice');
  return {
    id: model.id,
    name: model.name,
    created: model.created,
    description: model.description,
    // The endpoints shape requires `tokenizer` (nullable); the catalog records none.
    architecture: { ...architecture(model), tokenizer: null },
    endpoints: model.providers.map(({ provider, upstreamModel }) => ({
      name: `${provider.name} | ${upstreamModel}`,
      model_id: model.id,
      model_name: model.name,
      provider_name: provider.name,
      tag: provider.name,
      context_length: model.contextLength,
      max_completion_tokens: model.maxOutputTokens ?? null,
      max_prompt_tokens: null,
      pricing: pricingOf(model),
      quantization: null,
      supported_parameters: [...model.supportedParameters],
      supports_implicit_caching: false,
      supports_tool_choice: {
        auto: toolChoice,
        none: toolChoice,
        required: toolChoice,
        function: toolChoice,
      },
      latency_last_30m: null,
      throughput_last_30m: null,
      uptime_last_5m: null,
      uptime_last_30m: null,
      uptime_last_1d: null,
    })),
  };
}
