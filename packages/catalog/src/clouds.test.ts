import { describe, expect, it } from 'vitest';
import { CatalogError, parseCatalog } from './catalog';

const problemsOf = (text: string): string[] => {
  try {
    parseCatalog(text, { env: {} });
  } catch (err) {
    if (err instanceof CatalogError) return err.problems;
    throw err;
  }
  return [];
};

const model = (provider: string) => `
  - id: t/m
    name: m
    context_length: 1000
    created: 1
    providers: [{ provider: ${provider}, model: up }]
    pricing: { prompt: "0.000001", completion: "0.000002" }`;

describe('cloud provider formats', () => {
  it('reads gemini, azure (resource → base URL, api_version, auth) and bedrock (region → base URL, profile)', () => {
    const c = parseCatalog(
      `
providers:
  - { name: g, base_url: "https://generativelanguage.googleapis.com/v1beta", format: gemini, api_key_env: G }
  - { name: a, resource: my-res, format: azure, api_version: "2024-10-21", auth: bearer, api_key_env: A }
  - { name: b, format: bedrock, region: eu-west-1, aws_profile: prod }
models:${model('g')}
`,
      { env: { G: 'gk', A: 'ak' } },
    );
    expect(c.provider('g')).toMatchObject({ format: 'gemini', apiKey: 'gk' });
    expect(c.provider('a')).toMatchObject({
      format: 'azure',
      baseUrl: 'https://my-res.openai.azure.com',
      apiVersion: '2024-10-21',
      auth: 'bearer',
    });
    expect(c.provider('b')).toMatchObject({
      format: 'bedrock',
      baseUrl: 'https://bedrock-runtime.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      awsProfile: 'prod',
    });
  });

  it('names every missing or misplaced cloud field', () => {
    const problems = problemsOf(`
providers:
  - { name: a, base_url: "https://x.openai.azure.com", format: azure }
  - { name: b, format: bedrock }
  - { name: o, base_url: "https://api.openai.com/v1", region: us-east-1, api_version: "1" }
  - { name: n, format: azure, api_version: "2024-10-21" }
models:${model('a')}
`);
    expect(problems).toEqual(
      expect.arrayContaining([
        'providers[0] (a).api_version: required for format azure (e.g. "2024-10-21")',
        'providers[1] (b).region: required for format bedrock (e.g. "us-east-1")',
        'providers[2] (o).api_version: only for format azure',
        'providers[2] (o).region: only for format bedrock',
        'providers[3] (n).base_url: required (or resource)',
      ]),
    );
  });
});

describe('embedding models', () => {
  const providers = `
providers:
  - { name: p, base_url: "https://api.openai.com/v1" }`;

  it('declares limits, an input price only, and the embeddings modality', () => {
    const c = parseCatalog(
      `${providers}
models:
  - id: openai/text-embedding-3-small
    name: emb
    context_length: 8191
    created: 1
    output_modalities: [embeddings]
    embeddings: { dimensions: 1536, custom_dimensions: true, max_inputs: 2048, max_tokens_per_request: 300000 }
    providers: [{ provider: p, model: text-embedding-3-small }]
    pricing: { prompt: "0.00000002" }
`,
      { env: {} },
    );
    const m = c.model('openai/text-embedding-3-small');
    expect(m?.outputModalities).toEqual(['embeddings']);
    expect(m?.embeddings).toEqual({
      dimensions: 1536,
      customDimensions: true,
      maxInputs: 2048,
      maxTokensPerRequest: 300000,
    });
    expect(m?.priceUnits.completion).toBe(0n);
    expect(m?.supportedParameters).toEqual(['input', 'encoding_format', 'dimensions', 'user']);
  });

  it('refuses an embedding model without limits, a chat model without a completion price, and mixed modalities', () => {
    const problems = problemsOf(`${providers}
models:
  - { id: a/e, name: e, context_length: 10, created: 1, output_modalities: [embeddings], providers: [{ provider: p, model: e }], pricing: { prompt: "0" } }
  - { id: a/c, name: c, context_length: 10, created: 1, providers: [{ provider: p, model: c }], pricing: { prompt: "0" } }
  - id: a/m
    name: m
    context_length: 10
    created: 1
    output_modalities: [text, embeddings]
    embeddings: { dimensions: 8, max_inputs: 1, max_tokens_per_request: 10 }
    providers: [{ provider: p, model: m }]
    pricing: { prompt: "0" }
  - id: a/t
    name: t
    context_length: 10
    created: 1
    embeddings: { dimensions: 8, max_inputs: 1, max_tokens_per_request: 10 }
    providers: [{ provider: p, model: t }]
    pricing: { prompt: "0", completion: "0" }
`);
    expect(problems).toEqual([
      'models[0] (a/e).embeddings: required for an embedding model ({dimensions, max_inputs, max_tokens_per_request})',
      'models[1] (a/c).pricing.completion: required',
      'models[2] (a/m).output_modalities: an embedding model outputs ["embeddings"] only',
      'models[3] (a/t).embeddings: only for output_modalities ["embeddings"]',
    ]);
  });
});
