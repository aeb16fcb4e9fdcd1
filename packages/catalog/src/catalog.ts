import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { toDecimal } from '@tollgate/money';
import { parse as parseYaml } from 'yaml';
import { substituteEnv } from './env';
import { type CatalogFile, catalogFileSchema, DEFAULT_SUPPORTED_PARAMETERS } from './schema';

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
  /** Wire format of the upstream API (`anthropic`: Anthropic's Messages API at `<baseUrl>/messages`). */
  format: 'openai' | 'anthropic';
  /** The provider simulator: the proxy forwards its `sim` request field (dev/test catalogs only). */
  simulator: boolean;
  /**
   * Whether media URLs in messages may reach this provider (catalog `remote_media`; absent = true).
   * False: media only as `data:` URIs (self-hosted providers fetch URLs inside the operator's network).
   */
  remoteMedia?: boolean;
}

export interface ModelPricing<T> {
  prompt: T;
  completion: T;
  cacheRead: T;
  cacheWrite: T;
  request: T;
}

export interface CatalogModel {
  id: string;
  name: string;
  description: string;
  /** Unix seconds. */
  created: number;
  contextLength: number;
  maxOutputTokens: number | undefined;
  /** In order of preference. */
  providers: { provider: CatalogProvider; upstreamModel: string }[];
  /** Per-token USD decimal strings, normalized ("0.00000015"). */
  pricing: ModelPricing<string>;
  /** The same prices in @tollgate/money units (1e-10 USD). */
  priceUnits: ModelPricing<bigint>;
  supportedParameters: string[];
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
}

type Raw = Record<string, unknown>;
const asRecord = (v: unknown): Raw | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Raw) : undefined;
const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** "models[2] (openai/gpt-4o).pricing.prompt" */
function describePath(raw: unknown, path: readonly PropertyKey[]): string {
  let out = '';
  let node: unknown = raw;
  for (const seg of path) {
    if (typeof seg === 'number') {
      out += `[${seg}]`;
      node = asArray(node)[seg];
      const rec = asRecord(node);
      const label = rec?.id ?? rec?.name;
      if (typeof label === 'string' && out.split('[').length === 2) out += ` (${label})`;
    } else {
      out += out ? `.${String(seg)}` : String(seg);
      node = asRecord(node)?.[String(seg)];
    }
  }
  return out || '(root)';
}

/** Problems zod cannot see: references, duplicates, env. Works on the raw data so all are listed. */
function crossCheck(raw: unknown, env: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const root = asRecord(raw);
  const providerNames = new Set<string>();
  asArray(root?.providers).forEach((p, i) => {
    const rec = asRecord(p);
    const name = rec?.name;
    const at = `providers[${i}]${typeof name === 'string' ? ` (${name})` : ''}`;
    if (typeof name === 'string') {
      if (providerNames.has(name)) problems.push(`${at}.name: duplicate provider name "${name}"`);
      providerNames.add(name);
    }
    if (typeof rec?.base_url === 'string') {
      const { value, missing } = substituteEnv(rec.base_url, env);
      for (const m of missing)
        problems.push(`${at}.base_url: environment variable ${m} is not set and has no default`);
      if (missing.length === 0) {
        let ok = false;
        try {
          const u = new URL(value);
          ok = u.protocol === 'http:' || u.protocol === 'https:';
        } catch {}
        if (!ok) problems.push(`${at}.base_url: "${value}" is not an http(s) URL`);
      }
    }
    const keyEnv = rec?.api_key_env;
    if (rec?.api_key_required === true) {
      if (typeof keyEnv !== 'string') problems.push(`${at}.api_key_required: true needs api_key_env`);
      else if (!env[keyEnv])
        problems.push(`${at}.api_key_env: required API key variable ${keyEnv} is not set`);
    }
  });
  const modelIds = new Set<string>();
  asArray(root?.models).forEach((m, i) => {
    const rec = asRecord(m);
    const id = rec?.id;
    const at = `models[${i}]${typeof id === 'string' ? ` (${id})` : ''}`;
    if (typeof id === 'string') {
      if (modelIds.has(id)) problems.push(`${at}.id: duplicate model id "${id}"`);
      modelIds.add(id);
    }
    asArray(rec?.providers).forEach((ref, j) => {
      const provider = asRecord(ref)?.provider;
      if (typeof provider === 'string' && !providerNames.has(provider)) {
        problems.push(`${at}.providers[${j}].provider: unknown provider "${provider}"`);
      }
    });
    const ctx = rec?.context_length;
    const maxOut = rec?.max_output_tokens;
    if (typeof ctx === 'number' && typeof maxOut === 'number' && maxOut > ctx) {
      problems.push(`${at}.max_output_tokens: ${maxOut} is larger than context_length ${ctx}`);
    }
  });
  return problems;
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
      baseUrl: substituteEnv(p.base_url, env).value.replace(/\/+$/, ''),
      apiKeyEnv: p.api_key_env,
      apiKey: apiKeys[0],
      apiKeys: Object.freeze(apiKeys),
      format: p.format,
      simulator: p.simulator,
      remoteMedia: p.remote_media,
    });
  }
  const models = new Map<string, CatalogModel>();
  for (const m of file.models) {
    const { prompt, completion } = m.pricing;
    const cacheRead = m.pricing.cache_read ?? prompt;
    const cacheWrite = m.pricing.cache_write ?? prompt;
    const requestUnits = m.pricing.request?.units ?? 0n;
    const model: CatalogModel = {
      id: m.id,
      name: m.name,
      description: m.description,
      created: m.created,
      contextLength: m.context_length,
      maxOutputTokens: m.max_output_tokens,
      providers: m.providers.map((ref) => ({
        provider: providers.get(ref.provider)!,
        upstreamModel: ref.model,
      })),
      pricing: {
        prompt: toDecimal(prompt.units),
        completion: toDecimal(completion.units),
        cacheRead: toDecimal(cacheRead.units),
        cacheWrite: toDecimal(cacheWrite.units),
        request: toDecimal(requestUnits),
      },
      priceUnits: {
        prompt: prompt.units,
        completion: completion.units,
        cacheRead: cacheRead.units,
        cacheWrite: cacheWrite.units,
        request: requestUnits,
      },
      supportedParameters: m.supported_parameters ?? [...DEFAULT_SUPPORTED_PARAMETERS],
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
  const env = options.env ?? process.env;
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
  problems.push(...crossCheck(raw, env));
  if (problems.length > 0 || !parsed.success) throw new CatalogError(source, problems);
  return build(parsed.data, env);
}

/** Reads a catalog file (.json as JSON, anything else as YAML). Throws CatalogError. */
export function loadCatalog(path: string, env: Record<string, string | undefined> = process.env): Catalog {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CatalogError(path, [`cannot read file: ${(err as Error).message}`]);
  }
  const format: CatalogFormat = extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
  return parseCatalog(text, { format, env, source: path });
}
