import { describe, expect, it } from 'vitest';
import { hasFinishReason, hasUsage, mayHaveError, rewriteChunk, stripNullUsage } from './chunk';

describe('stripNullUsage', () => {
  it('removes a usage: null member wherever it sits', () => {
    expect(stripNullUsage('{"id":"a","choices":[],"usage":null}')).toBe('{"id":"a","choices":[]}');
    expect(stripNullUsage('{"usage":null,"id":"a"}')).toBe('{"id":"a"}');
    expect(stripNullUsage('{"id":"a", "usage" : null ,"x":1}')).toBe('{"id":"a" ,"x":1}');
    expect(JSON.parse(stripNullUsage('{"usage":null}'))).toEqual({});
  });

  it('leaves a real usage object and content mentioning usage alone', () => {
    const withUsage = '{"id":"a","usage":{"prompt_tokens":1}}';
    expect(stripNullUsage(withUsage)).toBe(withUsage);
    const content = '{"id":"a","choices":[{"delta":{"content":"\\"usage\\":null"}}]}';
    expect(stripNullUsage(content)).toBe(content);
    const word = '{"id":"a","choices":[{"delta":{"content":"usage"}}]}';
    expect(stripNullUsage(word)).toBe(word);
  });
});

describe('chunk rewriting', () => {
  const chunk =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":"\\"id\\":\\"x\\" \\"usage\\":{"},"finish_reason":null}],"usage":null}';

  it('rewrites id and model without touching content', () => {
    const out = rewriteChunk(chunk, 'gen-1-abc', 'vendor/model');
    expect(out?.upstreamId).toBe('chatcmpl-1');
    const parsed = JSON.parse(out!.text);
    expect(parsed.id).toBe('gen-1-abc');
    expect(parsed.model).toBe('vendor/model');
    expect(parsed.choices).toEqual(JSON.parse(chunk).choices);
  });

  it('falls back to parsing for other layouts and leaves non-JSON alone', () => {
    const out = rewriteChunk('{ "object": "x", "id": "a\\"b", "model": "m" }', 'gen-1-x', 'v/m');
    expect(JSON.parse(out!.text)).toEqual({ object: 'x', id: 'gen-1-x', model: 'v/m' });
    expect(out?.upstreamId).toBe('a"b');
    expect(rewriteChunk('not json', 'gen', 'm')).toBeNull();
  });

  it('tells usage, error and finish chunks from content that merely mentions them', () => {
    expect(hasUsage(chunk)).toBe(false);
    expect(mayHaveError(chunk)).toBe(false);
    expect(hasFinishReason(chunk)).toBe(false);
    expect(hasUsage('{"id":"x","choices":[],"usage": {"prompt_tokens":1}}')).toBe(true);
    expect(mayHaveError('{"error":{"message":"boom"}}')).toBe(true);
    expect(hasFinishReason('{"choices":[{"finish_reason":"stop"}]}')).toBe(true);
  });
});
