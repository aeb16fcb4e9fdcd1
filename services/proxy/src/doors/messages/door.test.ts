import { parseCatalog } from '@tollgate/catalog';
import { describe, expect, it } from 'vitest';
import { requestMedia } from '../../pipeline/media';
import { cacheWriteOf, parseForDoor } from './door';

const catalog = parseCatalog(`
providers:
  - { name: oa, base_url: "http://oa.test/v1", format: openai }
  - { name: an, base_url: "http://an.test/v1", format: anthropic }
models:
  - id: openai/small
    name: Small
    context_length: 128000
    max_output_tokens: 16384
    created: 1
    providers: [{ provider: oa, model: small }]
    pricing: { prompt: "0.000001", completion: "0.000002" }
  - id: openai/reasoner
    name: Reasoner
    context_length: 200000
    max_output_tokens: 100000
    created: 1
    supported_parameters: [max_tokens, tools, reasoning]
    providers: [{ provider: oa, model: reasoner }]
    pricing: { prompt: "0.000001", completion: "0.000002" }
`);

const body = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 32000,
  thinking: { type: 'enabled', budget_tokens: 31999 },
  metadata: { user_id: '{"device_id":"d","session_id":"s"}' },
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

describe('cacheWriteOf (the cache writes a native body asks for)', () => {
  it('finds cache_control in system, tools and (nested) content, 1h winning', () => {
    expect(cacheWriteOf({ messages: [{ role: 'user', content: 'x' }] })).toBeUndefined();
    expect(
      cacheWriteOf({ system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }] }),
    ).toBe('5m');
    expect(cacheWriteOf({ tools: [{ name: 't', cache_control: { type: 'ephemeral', ttl: '1h' } }] })).toBe(
      '1h',
    );
    const nested = {
      system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't',
              content: [{ type: 'text', text: 'r', cache_control: { type: 'ephemeral', ttl: '1h' } }],
            },
          ],
        },
      ],
    };
    expect(cacheWriteOf(nested)).toBe('1h');
    expect(parseForDoor(catalog, { ...body('openai/small'), ...nested }).cacheWrite).toBe('1h');
  });
});

describe('parseForDoor (the Messages door’s canonical request)', () => {
  it('caps max_tokens at the model’s output cap and drops thinking for a model that does not reason', () => {
    const r = parseForDoor(catalog, body('openai/small'));
    expect(r.body.max_tokens).toBe(16384);
    expect(r.maxTokens).toBe(16384);
    expect(r.body).not.toHaveProperty('reasoning_effort');
    expect(r.native).toMatchObject({ max_tokens: 32000, thinking: { budget_tokens: 31999 } });
  });

  it('maps thinking to reasoning_effort and max_completion_tokens for a reasoning model', () => {
    const r = parseForDoor(catalog, body('openai/reasoner'));
    expect(r.body).toMatchObject({ reasoning_effort: 'high', max_completion_tokens: 32000 });
    expect(r.body).not.toHaveProperty('max_tokens');
  });

  it('records the session id and metadata.user_id, and passes anthropic-beta on for the native path', () => {
    const r = parseForDoor(catalog, body('openai/small'), {
      'x-claude-code-session-id': 'e1e64ac6-255c-4f70-b8a8-4b90caf5f347',
      'anthropic-beta': 'claude-code-20250219,context-management-2025-06-27',
    });
    expect(r.sessionId).toBe('e1e64ac6-255c-4f70-b8a8-4b90caf5f347');
    expect(r.endUser).toBe('{"device_id":"d","session_id":"s"}');
    expect(r.nativeHeaders).toEqual({
      'anthropic-beta': 'claude-code-20250219,context-management-2025-06-27',
    });
    expect(parseForDoor(catalog, body('openai/small')).nativeHeaders).toBeUndefined();
  });

  it('carries the first untranslatable field as the 400 an OpenAI-format candidate answers', () => {
    const r = parseForDoor(catalog, body('openai/small', { top_k: 3 }));
    expect(r.untranslatable?.status).toBe(400);
    expect(r.untranslatable?.message).toMatch(/^top_k: /);
    expect(parseForDoor(catalog, body('openai/small')).untranslatable).toBeUndefined();
  });
});

describe('parseForDoor: media only the native body carries is reserved', () => {
  it('counts URL and file documents and file images (dropped from the canonical messages) in the census', () => {
    const request = parseForDoor(
      catalog,
      body('openai/small', {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'url', url: 'https://x.test/a.pdf' } },
              { type: 'document', source: { type: 'file', file_id: 'file_1' } },
              { type: 'image', source: { type: 'file', file_id: 'file_2' } },
              { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } },
              { type: 'text', text: 'read these' },
            ],
          },
        ],
      }),
    );
    const media = requestMedia(request.messages, 100, request.cacheWrite, request.nativeMedia);
    // Two documents and the file image from the native body, the URL image from the canonical messages.
    expect(media.census).toEqual({ images: { low: 0, high: 0, auto: 2 }, documents: 2 });
    // They count against MAX_IMAGES_PER_REQUEST too.
    expect(() => requestMedia(request.messages, 1, request.cacheWrite, request.nativeMedia)).toThrow(
      /MAX_IMAGES_PER_REQUEST/,
    );
  });
});
