import { estimatePromptTokens } from '@tollgate/tokens';
import { describe, expect, it } from 'vitest';
import { defaultEstimator } from '../http/app';
import { admissionPromptTokens, EXACT_LIMIT, promptTokenBound } from './prompt-bound';

const samples = [
  'Hello, world!',
  'The quick brown fox jumps over the lazy dog. '.repeat(50),
  'Zażółć gęślą jaźń — 日本語のテキスト、中文文本，한국어 텍스트 😀🎉🚀',
  '{"json": [1, 2, 3], "nested": {"key": "value"}}\n\tcode();\n'.repeat(20),
  Array.from({ length: 400 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join(''),
  'a'.repeat(5000),
];

describe('prompt token bound', () => {
  it('is never below the exact estimate, for any kind of text and message shape', () => {
    for (const text of samples) {
      const messages = [
        { role: 'system', content: text },
        {
          role: 'user',
          name: 'bob',
          content: [
            { type: 'text', text },
            { type: 'image_url', image_url: { url: 'x' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: text.slice(0, 50) } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: text.slice(0, 100) },
      ];
      expect(promptTokenBound(messages)).toBeGreaterThanOrEqual(estimatePromptTokens(messages));
      const toolsJson = JSON.stringify([{ type: 'function', function: { name: 'f', description: text } }]);
      expect(promptTokenBound(messages, toolsJson)).toBeGreaterThanOrEqual(
        estimatePromptTokens(messages, toolsJson),
      );
    }
  });

  it('uses the exact estimate for short prompts and the cheap bound for long ones', () => {
    const short = [{ role: 'user', content: 'short prompt' }];
    expect(admissionPromptTokens(short, null, defaultEstimator)).toEqual({
      tokens: estimatePromptTokens(short),
      exact: estimatePromptTokens(short),
    });
    const long = [{ role: 'user', content: 'word '.repeat(EXACT_LIMIT) }];
    const r = admissionPromptTokens(long, null, defaultEstimator);
    expect(r.exact).toBeNull();
    expect(r.tokens).toBe(promptTokenBound(long));
    expect(r.tokens).toBeGreaterThanOrEqual(estimatePromptTokens(long));
  });

  it('counts tool definitions on both paths, and long definitions take the bound', () => {
    const short = [{ role: 'user', content: 'short prompt' }];
    const small = JSON.stringify([{ type: 'function', function: { name: 'get_time', parameters: {} } }]);
    const exact = admissionPromptTokens(short, small, defaultEstimator);
    expect(exact.exact).toBe(estimatePromptTokens(short, small));
    expect(exact.tokens).toBeGreaterThan(estimatePromptTokens(short));
    const large = JSON.stringify([
      { type: 'function', function: { name: 'f', description: 'x'.repeat(EXACT_LIMIT) } },
    ]);
    const bound = admissionPromptTokens(short, large, defaultEstimator);
    expect(bound.exact).toBeNull();
    expect(bound.tokens).toBe(promptTokenBound(short, large));
    expect(bound.tokens).toBeGreaterThan(EXACT_LIMIT);
  });
});
