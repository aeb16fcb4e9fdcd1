import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { toDecimal } from '@tollgate/money';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_DOCUMENT_MAX_PAGES, DEFAULT_IMAGE_TOKENS, DOCUMENT_PAGE_TEXT_TOKENS } from './bounds';
import { crossCheck, describePath } from './catalog-checks';
import { substituteEnv } from './env';
import {
  type CatalogFile,
  catalogFileSchema,
  DEFAULT_SUPPORTED_PARAMETERS,
  type OUTPUT_MODALITIES,
  type WIRE_FORMATS,
} from './schema';

/** A provider wire format (catalog `format`). */
export type WireFormatName = (typeof WIRE_FORMATS)[number];
/** A model's output modality (catalog `output_modalities`). */
export type OutputModality = (typeof OUTPUT_MODALITIES)[number];

export interface CatalogProvider {
  name: string;
  /** Base URL of the OpenAI-compatible API, env placeholders resolved, no trailing slash. */
  baseUrl: string;
  /** Name of the env var holding the key; undefined for keyless local providers. */
  apiKeyEnv: string | undefined;
  /** The first key, read from env at load time; undefined when unset. */
  apiKey: string | undefined;
  /** Every key (api_key_env, then api_key_envs; comma-separated values split), in order. */
  apiKeys: readonly string[];
  /** Wire format of the upstream API (README.md, "Wire formats"). */
  format: WireFormatName;
  /** azure: the `api-version` query parameter; undefined for other formats. */
  apiVersion: string | undefined;
  /** azure: how the key is sent (`api-key` header, the default, or a bearer token). */
  auth: 'api-key' | 'bearer';
  /** bedrock: the AWS region requests are signed for. */
  region: string | undefined;
  /** bedrock: the named AWS profile credentials come from (undefined: the standard AWS env vars). */
  awsProfile: string | undefined;
  /** The provider simulator: the proxy forwards its `sim` request field (dev/test catalogs only). */
  simulator: boolean;
  /**
   * Whether media URLs in messages may reach this provider (catalog `remote_media`; absent = true).
   * False: media only as `data:` URIs (self-hosted providers fetch URLs inside the operator's network).
   */
  remoteMedia?: boolean;
  /** An OpenAI-format provider that serves OpenAI's Responses API at `<baseUrl>/responses` too. */
  responses: boolean;
}

export interface ModelPricing<T> {
  prompt: T;
  completion: T;
  cacheRead: T;
  cacheWrite: T;
  /** 1-hour cache writes (Anthropic `cache_control.ttl: "1h"`). */
  cacheWrite1h: T;
  request: T;
}

/** Prompt tokens one image counts at each OpenAI `detail` (an image without one is `auto`). */
export interface ImageTokens {
  low: number;
  high: number;
  auto: number;
}

/** A reasoning model's declared bound on the reasoning tokens of one completion. */
export interface ReasoningBound {
  maxTokens: number;
  /** Per `reasoning_effort`, when the catalog declares it. */
  effort: Partial<Record<'minimal' | 'low' | 'medium' | 'high', number>>;
}

export interface CatalogModel {
  id: string;
  name: string;
  description: string;
  /** Unix seconds. */
  created: number;
  contextLength: number;
  maxOutputTokens: number | undefined;
  /** What one image part can count as prompt tokens (declared, else the conservative default). */
  imageTokens: ImageTokens;
  /** What one document page can count as prompt tokens, and the most pages a document can have. */
  documentPageTokens: number;
  documentMaxPages: number;
  /** A reasoning model's bound on hidden reasoning tokens; null for other models. */
  reasoning: ReasoningBound | null;
  /** In order of preference. */
  providers: { provider: CatalogProvider; upstreamModel: string }[];
  /** Per-token USD decimal strings, normalized ("0.00000015"). */
  pricing: ModelPricing<string>;
  /** The same prices in @tollgate/money units (1e-10 USD). */
  priceUnits: ModelPricing<bigint>;
  supportedParameters: string[];
  /** `["text"]` for chat models, `["embeddings"]` for embedding models (POST /embeddings only). */
  outputModalities: readonly OutputModality[];
  /** An embedding model's vector size and request limits; undefined for chat models. */
  embeddings: EmbeddingLimits | undefined;
}

/** An embedding model's vector size and request limits (catalog `embeddings`). */
export interface EmbeddingLimits {
  dimensions: number;
  /** The caller may ask for shorter vectors with `dimensions`. */
  customDimensions: boolean;
  maxInputs: number;
  maxTokensPerRequest: number;
}

export interface Catalog {
  model(id: string): CatalogModel | undefined;
  models(): readonly CatalogModel[];
  provider(name: string): CatalogProvider | undefined;
  providers(): readonly CatalogProvider[];
}

export class CatalogError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(
      `Invalid model catalog ${source} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'CatalogError';
  }
}

export type CatalogFormat = 'yaml' | 'json';

export interface ParseCatalogOptions {
  format?: CatalogFormat;
  /** For `${VAR:-default}` in base_url and for API keys; default process.env. */
  env?: Record<string, string | undefined>;
  /** Named in error messages (a path); default "(inline)". */
  source?: string;
  /**
   * Only the models and their prices are wanted (billing recomputes costs): the environment is
   * neither checked nor read (no provider URL or API key needed, none kept).
   */
  pricesOnly?: boolean;
}

function resolveImageTokens(declared: { low?: number; high?: number; auto?: number } = {}): ImageTokens {
  const high = declared.high ?? DEFAULT_IMAGE_TOKENS.high;
  return {
    low: declared.low ?? Math.min(DEFAULT_IMAGE_TOKENS.low, high),
    high,
    auto: declared.auto ?? Math.max(high, declared.low ?? 0),
  };
}

/** The parameters an embedding model accepts (shown in /models). */
const EMBEDDING_PARAMETERS = ['input', 'encoding_format', 'dimensions', 'user'] as const;

/** base_url with env resolved, or the one the format derives (azure resource, bedrock region). */
function baseUrlOf(p: CatalogFile['providers'][number], env: Record<string, string | undefined>): string {
  if (p.base_url !== undefined) return substituteEnv(p.base_url, env).value.replace(/\/+$/, '');
  if (p.format === 'azure') return `https://${p.resource}.openai.azure.com`;
  return `https://bedrock-runtime.${p.region}.amazonaws.com`;
}

function build(file: CatalogFile, env: Record<string, string | undefined>): Catalog {
  const providers = new Map<string, CatalogProvider>();
  for (const p of file.providers) {
    const apiKeys = [p.api_key_env, ...(p.api_key_envs ?? [])]
      .flatMap((name) => (name ? (env[name] ?? '').split(',') : []))
      .map((k) => k.trim())
      .filter((k) => k.length > 0);
    providers.set(p.name, {
      name: p.name,
      baseUrl: baseUrlOf(p, env),
      apiKeyEnv: p.api_key_env,
      apiKey: apiKeys[0],
      apiKeys: Object.freeze(apiKeys),
      format: p.format,
      simulator: p.simulator,
      remoteMedia: p.remote_media,
      apiVersion: p.api_version,
      auth: p.auth ?? 'api-key',
      region: p.region,
      awsProfile: p.aws_profile,
      responses: p.responses,
    });
  }
  const models = new Map<string, CatalogModel>();
  for (const m of file.models) {
    const { prompt } = m.pricing;
    const completion = m.pricing.completion ?? { text: '0', units: 0n };
    const cacheRead = m.pricing.cache_read ?? prompt;
    const cacheWrite = m.pricing.cache_write ?? prompt;
    // Undeclared: Anthropic's rule (2 × input) for a model with priced cache writes; else none apart.
    const cacheWrite1hUnits =
      m.pricing.cache_write_1h?.units ?? (m.pricing.cache_write ? prompt.units * 2n : cacheWrite.units);
    const requestUnits = m.pricing.request?.units ?? 0n;
    const imageTokens = resolveImageTokens(m.image_tokens);
    const model: CatalogModel = {
      id: m.id,
      name: m.name,
      description: m.description,
      created: m.created,
      contextLength: m.context_length,
      maxOutputTokens: m.max_output_tokens,
      imageTokens: Object.freeze(imageTokens),
      documentPageTokens: m.document_page_tokens ?? imageTokens.high + DOCUMENT_PAGE_TEXT_TOKENS,
      documentMaxPages: m.document_max_pages ?? DEFAULT_DOCUMENT_MAX_PAGES,
      reasoning: m.reasoning
        ? Object.freeze({
            maxTokens: m.reasoning.max_tokens,
            effort: Object.freeze({ ...m.reasoning.effort }),
          })
        : null,
      providers: m.providers.map((ref) => ({
        provider: providers.get(ref.provider)!,
        upstreamModel: ref.model,
      })),
      pricing: {
        prompt: toDecimal(prompt.units),
        completion: toDecimal(completion.units),
        cacheRead: toDecimal(cacheRead.units),
        cacheWrite: toDecimal(cacheWrite.units),
        cacheWrite1h: toDecimal(cacheWrite1hUnits),
        request: toDecimal(requestUnits),
      },
      priceUnits: {
        prompt: prompt.units,
        completion: completion.units,
        cacheRead: cacheRead.units,
        cacheWrite: cacheWrite.units,
        cacheWrite1h: cacheWrite1hUnits,
        request: requestUnits,
      },
      supportedParameters:
        m.supported_parameters ??
        (m.embeddings ? [...EMBEDDING_PARAMETERS] : [...DEFAULT_SUPPORTED_PARAMETERS]),
      outputModalities: Object.freeze([...m.output_modalities]),
      embeddings: m.embeddings && {
        dimensions: m.embeddings.dimensions,
        customDimensions: m.embeddings.custom_dimensions,
        maxInputs: m.embeddings.max_inputs,
        maxTokensPerRequest: m.embeddings.max_tokens_per_request,
      },
    };
    Object.freeze(model.pricing);
    Object.freeze(model.priceUnits);
    models.set(m.id, Object.freeze(model));
  }
  const modelList = Object.freeze([...models.values()]);
  const providerList = Object.freeze([...providers.values()]);
  return {
    model: (id) => models.get(id),
    models: () => modelList,
    provider: (name) => providers.get(name),
    providers: () => providerList,
  };
}

/** Parses and validates catalog text. Throws CatalogError listing every problem found. */
export function parseCatalog(text: string, options: ParseCatalogOptions = {}): Catalog {
  const source = options.source ?? '(inline)';
  const env = options.pricesOnly ? {} : (options.env ?? process.env);
  let raw: unknown;
  try {
    raw = options.format === 'json' ? JSON.parse(text) : parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new CatalogError(source, [`cannot parse ${options.format ?? 'yaml'}: ${(err as Error).message}`]);
  }
  const parsed = catalogFileSchema.safeParse(raw);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${describePath(raw, i.path)}: ${i.message}`);
  problems.push(...crossCheck(raw, env, !options.pricesOnly));
  if (problems.length > 0 || !parsed.success) throw new CatalogError(source, problems);
  return build(parsed.data, env);
}

/** Reads a catalog file (.json as JSON, anything else as YAML). Throws CatalogError. */
export function loadCatalog(
  path: string,
  env: Record<string, string | undefined> = process.env,
  options: Pick<ParseCatalogOptions, 'pricesOnly'> = {},
): Catalog {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CatalogError(path, [`cannot read file: ${(err as Error).message}`]);
  }
  const format: CatalogFormat = extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
  return parseCatalog(text, { format, env, source: path, ...options });
}
