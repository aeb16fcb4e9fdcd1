import { substituteEnv } from './env';

/**
 * The catalog's checks beyond its schema (parseCatalog): where a problem is, and what the schema alone
 * cannot tell (provider formats, output modalities, the environment its providers name).
 */
type Raw = Record<string, unknown>;
const asRecord = (v: unknown): Raw | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Raw) : undefined;
const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** "models[2] (openai/gpt-4o).pricing.prompt" */
export function describePath(raw: unknown, path: readonly PropertyKey[]): string {
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

/** The fields a provider's format needs (azure: api_version, a URL; bedrock: region) and only it. */
function providerFormatProblems(rec: Raw | undefined, at: string): string[] {
  if (!rec) return [];
  const problems: string[] = [];
  const format = rec.format ?? 'openai';
  const only = (field: string, formats: string[]) => {
    if (rec[field] !== undefined && !formats.includes(String(format)))
      problems.push(`${at}.${field}: only for format ${formats.join(' or ')}`);
  };
  only('resource', ['azure']);
  only('api_version', ['azure']);
  only('auth', ['azure']);
  only('region', ['bedrock']);
  only('aws_profile', ['bedrock']);
  if (format === 'azure' && rec.api_version === undefined)
    problems.push(`${at}.api_version: required for format azure (e.g. "2024-10-21")`);
  if (format === 'bedrock' && rec.region === undefined)
    problems.push(`${at}.region: required for format bedrock (e.g. "us-east-1")`);
  const derived = (format === 'azure' && rec.resource !== undefined) || format === 'bedrock';
  if (rec.base_url === undefined && !derived)
    problems.push(`${at}.base_url: required${format === 'azure' ? ' (or resource)' : ''}`);
  return problems;
}

/** A model is a chat model (completion price) or an embedding model (its `embeddings` limits). */
function modalityProblems(rec: Raw | undefined, at: string): string[] {
  if (!rec) return [];
  const modalities = asArray(rec.output_modalities ?? ['text']);
  const embeddings = modalities.includes('embeddings');
  const pricing = asRecord(rec.pricing);
  if (embeddings && modalities.length > 1)
    return [`${at}.output_modalities: an embedding model outputs ["embeddings"] only`];
  if (embeddings && rec.embeddings === undefined)
    return [
      `${at}.embeddings: required for an embedding model ({dimensions, max_inputs, max_tokens_per_request})`,
    ];
  if (!embeddings && rec.embeddings !== undefined)
    return [`${at}.embeddings: only for output_modalities ["embeddings"]`];
  if (!embeddings && pricing && pricing.completion === undefined)
    return [`${at}.pricing.completion: required`];
  const dims = asRecord(rec.embeddings);
  if (
    embeddings &&
    typeof dims?.max_tokens_per_request === 'number' &&
    typeof rec.context_length === 'number' &&
    dims.max_tokens_per_request < rec.context_length
  )
    return [`${at}.embeddings.max_tokens_per_request: smaller than context_length (the tokens of one input)`];
  return [];
}

/** Problems zod cannot see: references, duplicates, env. Works on the raw data so all are listed. */
export function crossCheck(
  raw: unknown,
  env: Record<string, string | undefined>,
  checkEnv: boolean,
): string[] {
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
    problems.push(...providerFormatProblems(rec, at));
    if (checkEnv && typeof rec?.base_url === 'string') {
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
    if (checkEnv && rec?.api_key_required === true) {
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
    problems.push(...modalityProblems(rec, at));
    const ctx = rec?.context_length;
    const maxOut = rec?.max_output_tokens;
    if (typeof ctx === 'number' && typeof maxOut === 'number' && maxOut > ctx) {
      problems.push(`${at}.max_output_tokens: ${maxOut} is larger than context_length ${ctx}`);
    }
  });
  return problems;
}

/**
 * A model's image bounds: the declared ones; `high` defaults to the conservative default, `auto` (the
 * provider picks low or high) to `high`, `low` to the smaller of the default's and `high`.
 */
