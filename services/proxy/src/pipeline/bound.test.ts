import { parseCatalog } from '@tollgate/catalog';
import { describe, expect, it } from 'vitest';
import { upperBound } from './bound';
import { requestMedia } from './media';
import type { CanonicalRequest } from './request';

const catalog = parseCatalog(
  `
providers:
  - { name: p, base_url: "http://127.0.0.1:1/v1" }
models:
  - id: a/reasoner
    name: r
    context_length: 100000
    max_output_tokens: 20000
    created: 1
    image_tokens: { low: 100, high: 1000 }
    document_page_tokens: 500
    document_max_pages: 4
    reasoning: { max_tokens: 8000, effort: { low: 1000 } }
    providers: [{ provider: p, model: r }]
    pricing: { prompt: "0.000001", completion: "0.000004", cache_write: "0.00000125", cache_write_1h: "0.000002" }
  - id: a/plain
    name: plain
    context_length: 5000
    created: 1
    providers: [{ provider: p, model: m }]
    pricing: { prompt: "0.000001", completion: "0.000002" }
`,
  { env: {} },
);
const reasoner = catalog.model('a/reasoner')!;
const plain = catalog.model('a/plain')!;

const request = (
  over: Partial<CanonicalRequest> = {},
  body: Record<string, unknown> = {},
): CanonicalRequest => ({
  body,
  model: 'a/reasoner',
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
  maxTokens: null,
  n: 1,
  toolsJson: null,
  ...over,
});

const media = (content: unknown[]) => requestMedia([{ role: 'user', content }], 100);

describe('upperBound (issue 22)', () => {
  it('adds the reasoning budget to the produced text: declared bound, per effort, within max_tokens', () => {
    const none = media([]);
    const base = {
      model: reasoner,
      media: none,
      promptTextTokens: 50,
      producedTokens: 30,
      observed: 'stream' as const,
    };
    expect(upperBound({ ...base, request: request() })).toMatchObject({
      prompt: 50,
      completion: 8030,
      reasoning: 8000,
    });
    expect(upperBound({ ...base, request: request({}, { reasoning_effort: 'low' }) })).toMatchObject({
      completion: 1030,
      reasoning: 1000,
    });
    // max_tokens covers reasoning and text together: never more than it, never below what was seen.
    expect(upperBound({ ...base, request: request({ maxTokens: 500 }) })).toMatchObject({ completion: 500 });
    expect(upperBound({ ...base, producedTokens: 900, request: request({ maxTokens: 500 }) })).toMatchObject({
      completion: 900,
    });
    // n completions: n reasoning budgets.
    expect(upperBound({ ...base, request: request({ n: 2 }) }).reasoning).toBe(16000);
    // Not a reasoning model: the produced text only.
    expect(upperBound({ ...base, model: plain, request: request() })).toMatchObject({
      completion: 30,
      reasoning: 0,
    });
  });

  it('bills the whole output budget for an answer never seen, and no completion for prompt-only', () => {
    const base = { model: reasoner, media: media([]), promptTextTokens: 50, producedTokens: 0 };
    expect(
      upperBound({ ...base, observed: 'none', request: request({ maxTokens: 3000, n: 2 }) }).completion,
    ).toBe(6000);
    expect(upperBound({ ...base, observed: 'none', request: request() }).completion).toBe(20000);
    expect(upperBound({ ...base, observed: 'prompt-only', request: request() })).toMatchObject({
      completion: 0,
    });
  });

  it('prices images by detail, documents by pages, capped at the context; cache writes when asked', () => {
    const parts = media([
      { type: 'image_url', image_url: { url: 'x', detail: 'low' } },
      { type: 'image_url', image_url: { url: 'x', detail: 'high' } },
      { type: 'input_image', image_url: 'x' },
      { type: 'file', file: { file_id: 'f' } },
      { type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    const b = upperBound({
      model: reasoner,
      media: parts,
      promptTextTokens: 50,
      producedTokens: 0,
      observed: 'prompt-only',
      request: request(),
    });
    // 50 + 100 (low) + 1000 (high) + 1000 (auto = high) + 4 pages × 500.
    expect(b).toMatchObject({ prompt: 4150, cacheWrite: 4150, cacheWrite1h: 4150 });
    // A model whose context is smaller than that: the provider refuses longer prompts.
    const capped = upperBound({
      ...{ media: parts, promptTextTokens: 50, producedTokens: 0 },
      model: plain,
      observed: 'prompt-only',
      request: request(),
    });
    expect(capped.prompt).toBe(5000);
    // cache_write priced like prompt (plain): no cache-write tokens in the bound.
    expect(capped.cacheWrite).toBe(0);
  });

  it('refuses more images than the limit, naming MAX_IMAGES_PER_REQUEST', () => {
    expect(() =>
      requestMedia([{ role: 'user', content: [{ type: 'image' }, { type: 'image' }] }], 1),
    ).toThrowError(/MAX_IMAGES_PER_REQUEST/);
  });
});
