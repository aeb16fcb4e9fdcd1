import {
  type ChatMessageLike,
  countPromptTokens,
  estimateCompletionTokens,
  estimatePromptTokens,
} from '@tollgate/tokens';
import { encode } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../index';

/** Exact o200k prompt count with OpenAI's overheads, straight from gpt-tokenizer (no bounds). */
function exactPromptTokens(messages: ChatMessageLike[]): number {
  const enc = (t: string) => encode(t, { disallowedSpecial: new Set() }).length;
  let n = 3;
  for (const m of messages) {
    n += 3 + enc(m.role);
    if (typeof m.content === 'string') n += enc(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) n += enc(String(p.text ?? ''));
    if (typeof m.name === 'string') n += 1 + enc(m.name);
  }
  return n;
}

// @tollgate/tokens' estimates against the simulator's usage (moved here from packages/tokens so the
// simulator can depend on @tollgate/tokens without a dependency cycle).
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
      // Both sides use @tollgate/tokens' bounded count, exact for these texts unless the machine is
      // so loaded that a count runs out of its time budget (then both err high, by UTF-8 bytes).
      const exact = exactPromptTokens(messages);
      expect(body.usage.prompt_tokens, at).toBeGreaterThanOrEqual(exact);
      expect(countPromptTokens(messages), at).toBeGreaterThanOrEqual(exact);
      expect(estimatePromptTokens(messages), at).toBeGreaterThanOrEqual(exact + Math.ceil(exact / 20));
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
