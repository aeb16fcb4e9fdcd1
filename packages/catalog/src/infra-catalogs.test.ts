import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CatalogError, loadCatalog } from './catalog';

const file = (name: string) => fileURLToPath(new URL(`../../../infra/catalog/${name}`, import.meta.url));

describe('shipped catalogs', () => {
  it('infra/catalog/dev.yaml loads and points every model at the simulator', () => {
    const c = loadCatalog(file('dev.yaml'), {});
    expect(c.models().length).toBeGreaterThanOrEqual(4);
    for (const m of c.models()) expect(m.providers[0]!.provider.simulator).toBe(true);
    // One simulator, both wire formats (the Messages door's native path needs an Anthropic-format one).
    expect(c.provider('sim-anthropic')!.format).toBe('anthropic');
    expect(c.provider('sim-anthropic')!.baseUrl).toBe(c.provider('sim')!.baseUrl);
    expect(c.model('anthropic/claude-sonnet-4.5')!.providers[0]!.provider.name).toBe('sim-anthropic');
    // And serving OpenAI's Responses API (the Responses door's native path).
    expect(c.provider('sim-responses')).toMatchObject({ format: 'openai', responses: true, simulator: true });
    expect(c.model('openai/gpt-5.1-codex')!.providers[0]!.provider.name).toBe('sim-responses');
    expect(c.provider('sim')!.baseUrl).toBe('http://127.0.0.1:8090/v1');
    expect(
      loadCatalog(file('dev.yaml'), { PROVIDER_SIM_URL: 'http://sim:8090' }).provider('sim')!.baseUrl,
    ).toBe('http://sim:8090/v1');
    expect(c.model('anthropic/claude-sonnet-4')!.pricing.cacheWrite).toBe('0.00000375');
  });

  it('infra/catalog/example.providers.yaml loads once the cloud keys are set, and lists each missing one otherwise', () => {
    const env = {
      OPENAI_API_KEY: 'a',
      GROQ_API_KEY: 'b',
      TOGETHER_API_KEY: 'c',
      DEEPSEEK_API_KEY: 'd',
      ANTHROPIC_API_KEY: 'e',
    };
    const c = loadCatalog(file('example.providers.yaml'), env);
    expect(c.providers().map((p) => p.name)).toEqual([
      'openai',
      'groq',
      'together',
      'deepseek',
      'anthropic',
      'vllm',
      'ollama',
    ]);
    expect(c.provider('ollama')!.baseUrl).toBe('http://127.0.0.1:11434/v1');
    expect(c.provider('openai')!.apiKey).toBe('a');
    expect(c.provider('openai')!.format).toBe('openai');
    expect(c.provider('anthropic')!.format).toBe('anthropic');
    expect(c.model('anthropic/claude-sonnet-4.5')!.pricing.cacheWrite).toBe('0.00000375');
    expect(c.model('meta-llama/llama-3.1-8b-instruct')!.providers.map((p) => p.provider.name)).toEqual([
      'groq',
      'together',
    ]);
    let err: unknown;
    try {
      loadCatalog(file('example.providers.yaml'), {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CatalogError);
    expect((err as CatalogError).problems).toHaveLength(5);
  });

  it('reports a missing file as a CatalogError', () => {
    expect(() => loadCatalog('/nonexistent/catalog.yaml')).toThrow(/cannot read file/);
  });
});
