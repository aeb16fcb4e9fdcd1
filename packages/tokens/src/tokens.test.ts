import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { encode } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatMessageLike,
  countPromptTokens,
  countTextTokens,
  estimateCompletionTokens,
  estimatePromptTokens,
} from './index';

describe('countTextTokens', () => {
  it('matches the o200k tokenizer and treats special-token text as plain text', () => {
    expect(countTextTokens('')).toBe(0);
    expect(countTextTokens('Hello, world!')).toBe(encode('Hello, world!').length);
    expect(countTextTokens('a <|endoftext|> b')).toBeGreaterThan(3);
    expect(countTextTokens('x'.repeat(20_000))).toBe(encode('x'.repeat(20_000)).length);
  });
});

describe('estimatePromptTokens', () => {
  it('adds the per-message overhead, then a 5% margin rounded up', () => {
    const messages = [{ role: 'user', content: 'Hello' }];
    const exact = 3 + 3 + encode('user').length + encode('Hello').length;
    expect(countPromptTokens(messages)).toBe(exact);
    expect(estimatePromptTokens(messages)).toBe(exact + Math.ceil(exact * 0.05));
  });

  it('reads content parts with text, names, tool calls and counts images generously', () => {
    const parts = estimatePromptTokens([{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }]);
    expect(parts).toBe(estimatePromptTokens([{ role: 'user', content: 'Hello' }]));
    const withImage = countPromptTokens([
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
    ]);
    expect(withImage).toBeGreaterThanOrEqual(765);
    expect(countPromptTokens([{ role: 'user', name: 'ann', content: 'x' }])).toBe(
      countPromptTokens([{ role: 'user', content: 'x' }]) + 1 + encode('ann').length,
    );
    expect(
      countPromptTokens([
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', function: { name: 'f' } }] },
      ]),
    ).toBeGreaterThan(countPromptTokens([{ role: 'assistant', content: null }]));
  });
});

describe('estimateCompletionTokens', () => {
  it('is the text count plus the margin', () => {
    expect(estimateCompletionTokens('')).toBe(0);
    const n = encode('The quick brown fox.').length;
    expect(estimateCompletionTokens('The quick brown fox.')).toBe(n + Math.ceil(n / 20));
  });
});

describe('estimates against the provider simulator', () => {
  let sim: ProviderSim;
  beforeAll(async () => {
    sim = await startProviderSim();
  });
  afterAll(() => sim.close());

  const samples: ChatMessageLike[][] = [];
  const texts = [
    'Hi',
    'What is the capital of France?',
    'Ünïcødé — “quotes”, emojis 🚀🔥 and 中文字符 mixed with code: `const x = 1;`',
    'def f(x):\n    return x ** 2  # squares\n\n\tprint(f(3))',
    '<|endoftext|> special tokens as text <|im_start|>',
    'a'.repeat(3000),
    'lorem ipsum dolor sit amet '.repeat(80),
    '{"json": [1, 2, 3], "nested": {"k": "v"}}',
    '   leading and trailing whitespace   \n\n',
    '1234567890 3.14159 2.71828 -42 1e10',
  ];
  for (let i = 0; i < texts.length; i++) {
    samples.push([{ role: 'user', content: texts[i]! }]);
    samples.push([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', name: 'user_1', content: texts[i]! },
      { role: 'assistant', content: texts[(i + 1) % texts.length]! },
      {
        role: 'user',
        content: [
          { type: 'text', text: texts[(i + 2) % texts.length]! },
          { type: 'text', text: 'and?' },
        ],
      },
    ]);
  }

  it(`never estimates below the simulator's usage for ${samples.length} prompts and their completions`, async () => {
    for (const messages of samples) {
      const res = await fetch(`${sim.baseUrl}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages }),
      });
      const body = (await res.json()) as {
        usage: { prompt_tokens: number; completion_tokens: number };
        choices: { message: { content: string } }[];
      };
      const at = JSON.stringify(messages).slice(0, 120);
      expect(estimatePromptTokens(messages), at).toBeGreaterThanOrEqual(body.usage.prompt_tokens);
      expect(countPromptTokens(messages), at).toBe(body.usage.prompt_tokens);
      expect(estimateCompletionTokens(body.choices[0]!.message.content), at).toBeGreaterThanOrEqual(
        body.usage.completion_tokens,
      );
    }
  });

  it('never estimates a cut stream below what the simulator had sent', async () => {
    const res = await fetch(`${sim.baseUrl}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'cut me' }],
        stream: true,
        sim: { cut_after_chunks: 17, completion_tokens: 40 },
      }),
    });
    let raw = '';
    const reader = res.body!.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        raw += new TextDecoder().decode(value);
      }
    } catch {}
    const text = raw
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map(
        (e) =>
          (JSON.parse(e.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta
            .content ?? '',
      )
      .join('');
    expect(estimateCompletionTokens(text)).toBeGreaterThanOrEqual(17);
  });
});
