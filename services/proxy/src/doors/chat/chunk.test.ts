import { describe, expect, it } from 'vitest';
import { stripNullUsage } from './chunk';

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
