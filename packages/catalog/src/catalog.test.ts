import { describe, expect, it } from 'vitest';
import { CatalogError, parseCatalog } from './catalog';

const valid = `
providers:
  - name: sim
    base_url: \${SIM_URL:-http://127.0.0.1:8090}/v1/
    api_key_env: SIM_KEY
  - name: local
    base_url: http://localhost:11434/v1
    remote_media: false
models:
  - id: openai/gpt-4o-mini
    name: GPT-4o mini
    context_length: 128000
    max_output_tokens: 16384
    created: 1721260800
    providers: [{ provider: sim, model: gpt-4o-mini }, { provider: local, model: llama }]
    pricing: { prompt: "0.00000015", completion: "0.0000006", cache_read: "0.000000075" }
`;

function problemsOf(
  text: string,
  env: Record<string, string | undefined> = {},
  format: 'yaml' | 'json' = 'yaml',
) {
  try {
    parseCatalog(text, { env, format });
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogError);
    return (err as CatalogError).problems;
  }
  throw new Error('expected the catalog to be rejected');
}

describe('parseCatalog', () => {
  it('builds models and providers with defaults, env substitution and normalized prices', () => {
    const c = parseCatalog(valid, { env: { SIM_KEY: 'sk-up' } });
    const sim = c.provider('sim')!;
    expect(sim).toEqual({
      name: 'sim',
      baseUrl: 'http://127.0.0.1:8090/v1',
      apiKeyEnv: 'SIM_KEY',
      apiKey: 'sk-up',
      apiKeys: ['sk-up'],
      format: 'openai',
      simulator: false,
      remoteMedia: true,
      apiVersion: undefined,
      auth: 'api-key',
      region: undefined,
      awsProfile: undefined,
      responses: false,
    });
    expect(c.provider('local')!.remoteMedia).toBe(false);
    expect(c.provider('local')!.apiKey).toBeUndefined();
    expect(c.provider('local')!.apiKeys).toEqual([]);
    const m = c.model('openai/gpt-4o-mini')!;
    expect(m.description).toBe('');
    expect(m.pricing).toEqual({
      prompt: '0.00000015',
      completion: '0.0000006',
      cacheRead: '0.000000075',
      cacheWrite: '0.00000015',
      cacheWrite1h: '0.00000015',
      request: '0',
    });
    expect(m.priceUnits).toEqual({
      prompt: 1500n,
      completion: 6000n,
      cacheRead: 750n,
      cacheWrite: 1500n,
      cacheWrite1h: 1500n,
      request: 0n,
    });
    // No declared media bounds or reasoning: the documented conservative defaults.
    expect(m.imageTokens).toEqual({ low: 2_833, high: 48_169, auto: 48_169 });
    expect(m.documentPageTokens).toBe(48_169 + 3_000);
    expect(m.documentMaxPages).toBe(100);
    expect(m.reasoning).toBeNull();
    expect(m.providers.map((p) => [p.provider.name, p.upstreamModel])).toEqual([
      ['sim', 'gpt-4o-mini'],
      ['local', 'llama'],
    ]);
    expect(c.models()).toHaveLength(1);
    expect(c.model('nope/nope')).toBeUndefined();
  });

  it('substitutes an env placeholder with its value when the variable is set', () => {
    const c = parseCatalog(valid, { env: { SIM_URL: 'http://sim.internal:9000' } });
    expect(c.provider('sim')!.baseUrl).toBe('http://sim.internal:9000/v1');
  });

  it('reads JSON catalogs', () => {
    const json = JSON.stringify({
      providers: [{ name: 'p', base_url: 'https://api.example.com/v1' }],
      models: [
        {
          id: 'v/m',
          name: 'M',
          context_length: 1000,
          created: 0,
          providers: [{ provider: 'p', model: 'm' }],
          pricing: { prompt: '1', completion: '2', request: '0.5' },
        },
      ],
    });
    const m = parseCatalog(json, { format: 'json', env: {} }).model('v/m')!;
    expect(m.priceUnits.request).toBe(5_000_000_000n);
    expect(m.maxOutputTokens).toBeUndefined();
  });

  it('lists every problem at once', () => {
    const bad = `
providers:
  - name: sim
    base_url: \${MISSING_URL}/v1
    api_key_env: SIM_KEY
    api_key_required: true
  - name: sim
    base_url: ftp://nowhere
models:
  - id: no-slash
    name: A
    context_length: 100
    created: 0
    providers: [{ provider: ghost, model: a }]
    pricing: { prompt: "abc", completion: 0.000001 }
  - id: v/b
    name: B
    context_length: 100
    max_output_tokens: 200
    created: 0
    providers: [{ provider: sim, model: b }]
    pricing: { prompt: "0.00000000001", completion: "-1" }
  - id: v/b
    name: B again
    context_length: 100
    created: 0
    providers: [{ provider: sim, model: b }]
    pricing: { prompt: "0", completion: "0", surprise: "1" }
`;
    const problems = problemsOf(bad);
    const text = problems.join('\n');
    expect(text).toMatch(/models\[0\] \(no-slash\)\.id: model id must look like "vendor\/name"/);
    expect(text).toMatch(
      /models\[0\] \(no-slash\)\.pricing\.prompt: "abc" is not a non-negative decimal USD amount/,
    );
    expect(text).toMatch(
      /models\[0\] \(no-slash\)\.pricing\.completion: price must be a quoted decimal string/,
    );
    expect(text).toMatch(/models\[0\] \(no-slash\)\.providers\[0\]\.provider: unknown provider "ghost"/);
    expect(text).toMatch(/models\[1\] \(v\/b\)\.pricing\.prompt: more than 10 decimal places/);
    expect(text).toMatch(/models\[1\] \(v\/b\)\.pricing\.completion: "-1" is not a non-negative/);
    expect(text).toMatch(/models\[1\] \(v\/b\)\.max_output_tokens: 200 is larger than context_length 100/);
    expect(text).toMatch(/models\[2\] \(v\/b\)\.id: duplicate model id "v\/b"/);
    expect(text).toMatch(/models\[2\] \(v\/b\)\.pricing: .*surprise/);
    expect(text).toMatch(/providers\[0\] \(sim\)\.base_url: environment variable MISSING_URL is not set/);
    expect(text).toMatch(/providers\[0\] \(sim\)\.api_key_env: required API key variable SIM_KEY is not set/);
    expect(text).toMatch(/providers\[1\] \(sim\)\.name: duplicate provider name "sim"/);
    expect(text).toMatch(/providers\[1\] \(sim\)\.base_url: "ftp:\/\/nowhere" is not an http\(s\) URL/);
    expect(problems.length).toBeGreaterThanOrEqual(13);
  });

  it('names missing required fields and wrong types', () => {
    const problems = problemsOf(
      `providers: [{ name: p, base_url: "http://x" }]\nmodels: [{ id: a/b, providers: [], pricing: {} }]`,
    ).join('\n');
    expect(problems).toMatch(/models\[0\] \(a\/b\)\.name:/);
    expect(problems).toMatch(/models\[0\] \(a\/b\)\.context_length:/);
    expect(problems).toMatch(/models\[0\] \(a\/b\)\.created:/);
    expect(problems).toMatch(/models\[0\] \(a\/b\)\.providers: a model needs at least one provider/);
    expect(problems).toMatch(/models\[0\] \(a\/b\)\.pricing\.prompt: price must be a quoted decimal string/);
  });

  it('marks OpenAI-format providers that serve the Responses API, and refuses the mark on another format', () => {
    const text = (format: string) =>
      `providers: [{ name: p, base_url: "http://x/v1", format: ${format}, responses: true }]\n` +
      `models: [{ id: a/b, name: b, context_length: 10, created: 1, providers: [{ provider: p, model: m }], pricing: { prompt: "0.000001", completion: "0.000001" } }]`;
    expect(parseCatalog(text('openai'), { env: {} }).provider('p')!.responses).toBe(true);
    expect(problemsOf(text('anthropic')).join('\n')).toMatch(/responses: only an OpenAI-format provider/);
  });

  it('reports unparsable YAML and JSON, and an empty file', () => {
    expect(problemsOf('providers: [unclosed')[0]).toMatch(/cannot parse yaml/);
    expect(problemsOf('{"providers":', {}, 'json')[0]).toMatch(/cannot parse json/);
    expect(problemsOf('').join('\n')).toMatch(/\(root\)/);
  });

  it('accepts a keyed provider whose key is set when required', () => {
    const text = valid.replace('api_key_env: SIM_KEY', 'api_key_env: SIM_KEY\n    api_key_required: true');
    expect(problemsOf(text, {})).toEqual([
      'providers[0] (sim).api_key_env: required API key variable SIM_KEY is not set',
    ]);
    expect(parseCatalog(text, { env: { SIM_KEY: 'k' } }).provider('sim')!.apiKey).toBe('k');
  });

  it('reads prices only (billing): no provider URL or API key needed, none kept', () => {
    const text = valid
      .replace(':-http://127.0.0.1:8090}', '}') // SIM_URL without a default
      .replace('api_key_env: SIM_KEY', 'api_key_env: SIM_KEY\n    api_key_required: true');
    expect(problemsOf(text, {}).length).toBe(2);
    const c = parseCatalog(text, { env: { SIM_KEY: 'secret' }, pricesOnly: true });
    expect(c.model('openai/gpt-4o-mini')!.priceUnits.completion).toBe(6000n);
    expect(c.provider('sim')!.apiKeys).toEqual([]);
  });

  it('collects several keys per provider: api_key_env, api_key_envs, comma-separated values', () => {
    const c = parseCatalog(
      `
providers:
  - { name: multi, base_url: "http://127.0.0.1:1/v1", api_key_env: K1, api_key_envs: [K2, K3] }
models:
  - id: a/b
    name: b
    context_length: 10
    created: 1
    providers: [{ provider: multi, model: b }]
    pricing: { prompt: "0.1", completion: "0.1" }
`,
      { env: { K1: 'one', K2: 'two, three', K3: '' } },
    );
    expect(c.provider('multi')!.apiKeys).toEqual(['one', 'two', 'three']);
    expect(c.provider('multi')!.apiKey).toBe('one');
  });
});

describe('media, reasoning and 1-hour cache-write fields (issue 22)', () => {
  const yaml = (model: string) => `
providers:
  - { name: p, base_url: "http://127.0.0.1:1/v1" }
models:
  - id: a/m
    name: m
    context_length: 200000
    max_output_tokens: 64000
    created: 1
    providers: [{ provider: p, model: m }]
    pricing: { prompt: "0.000003", completion: "0.000015", cache_write: "0.00000375", cache_write_1h: "0.000006" }
${model}`;

  it('reads declared image, document and reasoning bounds and the 1-hour price', () => {
    const m = parseCatalog(
      yaml(`    image_tokens: { low: 100, high: 1600 }
    document_page_tokens: 3200
    document_max_pages: 20
    reasoning: { max_tokens: 32000, effort: { low: 2000, high: 24000 } }`),
      { env: {} },
    ).model('a/m')!;
    // `auto` not declared: the provider picks low or high, so it is bounded by the higher.
    expect(m.imageTokens).toEqual({ low: 100, high: 1600, auto: 1600 });
    expect(m.documentPageTokens).toBe(3200);
    expect(m.documentMaxPages).toBe(20);
    expect(m.reasoning).toEqual({ maxTokens: 32000, effort: { low: 2000, high: 24000 } });
    expect(m.pricing.cacheWrite1h).toBe('0.000006');
    expect(m.priceUnits.cacheWrite1h).toBe(60_000n);
  });

  it('reports bad bounds with the model and field', () => {
    expect(() =>
      parseCatalog(yaml(`    image_tokens: { low: 0, huge: 5 }\n    reasoning: { effort: { low: 10 } }`), {
        env: {},
      }),
    ).toThrowError(/image_tokens[\s\S]*reasoning/);
  });
});
