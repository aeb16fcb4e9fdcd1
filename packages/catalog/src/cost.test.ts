import { toDecimal } from '@tollgate/money';
import { describe, expect, it } from 'vitest';
import { parseCatalog } from './catalog';
import { computeCost, worstCaseCost } from './cost';
import { toModelsEntry } from './models-entry';

const catalog = parseCatalog(
  `
providers: [{ name: p, base_url: "http://127.0.0.1:1/v1" }]
models:
  - id: v/priced
    name: Priced
    description: All prices set
    context_length: 10000
    max_output_tokens: 2000
    created: 1700000000
    providers: [{ provider: p, model: up }]
    pricing: { prompt: "0.000003", completion: "0.000015", cache_read: "0.0000003", cache_write: "0.00000375", request: "0.0001" }
  - id: v/plain
    name: Plain
    context_length: 8000
    created: 1700000000
    providers: [{ provider: p, model: up }]
    supported_parameters: [max_tokens]
    pricing: { prompt: "0.0000001", completion: "0.0000002" }
`,
  { env: {} },
);
const priced = catalog.model('v/priced')!;
const plain = catalog.model('v/plain')!;

describe('computeCost', () => {
  it('charges uncached, cached and cache-write prompt tokens at their own prices, plus completion and request', () => {
    const units = computeCost(priced, {
      prompt: 1000,
      completion: 500,
      cached: 200,
      cacheWrite: 100,
      reasoning: 50,
    });
    // 700·0.000003 + 200·0.0000003 + 100·0.00000375 + 500·0.000015 + 0.0001
    expect(toDecimal(units)).toBe('0.010135');
    expect(units).toBe(101_350_000n);
  });

  it('does not charge reasoning tokens twice', () => {
    const a = computeCost(priced, { prompt: 10, completion: 100, reasoning: 90 });
    const b = computeCost(priced, { prompt: 10, completion: 100 });
    expect(a).toBe(b);
  });

  it('defaults cache prices to the prompt price and the request price to zero', () => {
    const units = computeCost(plain, { prompt: 1234, completion: 567, cached: 34 });
    expect(toDecimal(units)).toBe('0.0002368');
  });

  it('is exact where floats are not (0.1 + 0.2 style sums)', () => {
    const m = parseCatalog(
      `providers: [{ name: p, base_url: "http://x" }]\nmodels: [{ id: a/b, name: x, context_length: 10, created: 0, providers: [{provider: p, model: m}], pricing: { prompt: "0.1", completion: "0.2" } }]`,
      { env: {} },
    ).model('a/b')!;
    expect(toDecimal(computeCost(m, { prompt: 1, completion: 1 }))).toBe('0.3');
    expect(toDecimal(computeCost(m, { prompt: 3, completion: 0 }))).toBe('0.3');
  });

  it('clamps cached counts larger than the prompt instead of going negative', () => {
    const units = computeCost(priced, { prompt: 10, completion: 0, cached: 50, cacheWrite: 50 });
    expect(units).toBe(10n * priced.priceUnits.cacheRead + priced.priceUnits.request);
  });
});

describe('worstCaseCost', () => {
  it('uses max_tokens when given, every prompt token at the dearest input price (cache write)', () => {
    // 1000·0.00000375 (cache write > prompt price) + 100·0.000015 + 0.0001
    expect(toDecimal(worstCaseCost(priced, 1000, { maxTokens: 100 }))).toBe('0.00535');
  });
  it('falls back to max_output_tokens, then to the context left', () => {
    expect(toDecimal(worstCaseCost(priced, 1000))).toBe('0.03385'); // 0.00375 + 2000·0.000015 + 0.0001
    expect(toDecimal(worstCaseCost(plain, 1000))).toBe('0.0015'); // 1000·1e-7 + 7000·2e-7
  });
  it('caps max_tokens at what the model can produce, and never goes negative', () => {
    expect(worstCaseCost(priced, 1000, { maxTokens: 1_000_000 })).toBe(
      worstCaseCost(priced, 1000, { maxTokens: 2000 }),
    );
    expect(worstCaseCost(plain, 9000)).toBe(9000n * plain.priceUnits.prompt);
  });
  it('reserves the output budget once per completion (n), the prompt once', () => {
    const one = worstCaseCost(priced, 1000, { maxTokens: 100 });
    const hundred = worstCaseCost(priced, 1000, { maxTokens: 100, n: 100 });
    expect(hundred - one).toBe(99n * 100n * priced.priceUnits.completion);
    expect(toDecimal(hundred)).toBe('0.15385'); // 0.00375 + 100·100·0.000015 + 0.0001
  });
  it('charges prompt tokens at the cache-read price when that is the dearest input price', () => {
    const m = { ...plain, priceUnits: { ...plain.priceUnits, cacheRead: plain.priceUnits.prompt * 3n } };
    expect(worstCaseCost(m, 10, { maxTokens: 1 })).toBe(
      10n * plain.priceUnits.prompt * 3n + plain.priceUnits.completion + plain.priceUnits.request,
    );
  });
});

describe('toModelsEntry', () => {
  it('renders the /models item with string prices and top_provider', () => {
    expect(toModelsEntry(priced)).toEqual({
      id: 'v/priced',
      canonical_slug: 'v/priced',
      architecture: {
        modality: 'text->text',
        input_modalities: ['text'],
        output_modalities: ['text'],
        instruct_type: null,
      },
      default_parameters: null,
      links: { details: '/api/v1/models/v/priced/endpoints' },
      per_request_limits: null,
      supported_voices: null,
      name: 'Priced',
      created: 1700000000,
      description: 'All prices set',
      context_length: 10000,
      pricing: {
        prompt: '0.000003',
        completion: '0.000015',
        input_cache_read: '0.0000003',
        input_cache_write: '0.00000375',
        request: '0.0001',
      },
      top_provider: { context_length: 10000, max_completion_tokens: 2000, is_moderated: false },
      supported_parameters: expect.arrayContaining(['max_tokens', 'temperature']),
    });
    expect(toModelsEntry(plain).top_provider.max_completion_tokens).toBeNull();
    expect(toModelsEntry(plain).supported_parameters).toEqual(['max_tokens']);
  });
});
