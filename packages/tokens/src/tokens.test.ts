import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { seededRandom } from '@tollgate/testkit/random';
import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import {
  ALWAYS_EXACT_CHARS,
  countPromptTokens,
  countTextTokens,
  EXACT_BUDGET_CHARS,
  estimateCompletionTokens,
  estimatePromptTokens,
  loadO200kRanks,
  MAX_PIECE_CHARS,
  MAX_RUN_CHARS,
  newBudget,
} from './index';

/**
 * The CPU time (ms) this thread spends in `fn`, and its result: what a count costs, whatever else the
 * machine runs. Wall time measured the scheduler on a loaded host (load average 37, 2 cores: the
 * 2.5 ms 'q' run took 78-100 ms on all 3 tries, the 9 ms prompt 731 ms).
 */
function cpuMsOf<T>(fn: () => T): [T, number] {
  const before = process.threadCpuUsage();
  const result = fn();
  const { user, system } = process.threadCpuUsage(before);
  return [result, (user + system) / 1000];
}

describe('loadO200kRanks', () => {
  it("is gpt-tokenizer's own o200k table, token for token (strings, and byte arrays where not UTF-8)", async () => {
    const { default: packaged } = await import('gpt-tokenizer/bpeRanks/o200k_base');
    const loaded = loadO200kRanks();
    expect(loaded.length).toBe(packaged.length);
    expect(loaded.length).toBeGreaterThan(199_000);
    // Element by element (one toEqual over 200,000 entries reports too little when it fails).
    const differing: number[] = [];
    for (let rank = 0; rank < packaged.length; rank++) {
      const a = packaged[rank];
      const b = loaded[rank];
      const same =
        typeof a === 'string'
          ? a === b
          : Array.isArray(b) && b.length === a?.length && b.every((x, i) => x === a[i]);
      if (!same) differing.push(rank);
    }
    expect(differing).toEqual([]);
    // Both kinds occur: the byte arrays are the tokens that are not whole UTF-8 sequences.
    expect(loaded.filter((t) => typeof t !== 'string').length).toBeGreaterThan(1000);
    expect(loaded[5574]).toEqual([239, 187, 191]);
  }, 120_000); // ~0.9 s of CPU; 20 s of wall time on a starved host (load average 37), the default is 30 s
});

describe('countTextTokens', () => {
  it('matches the o200k tokenizer and treats special-token text as plain text', () => {
    expect(countTextTokens('')).toBe(0);
    expect(countTextTokens('Hello, world!')).toBe(encode('Hello, world!').length);
    expect(countTextTokens('a <|endoftext|> b')).toBeGreaterThan(3);
    // Exact for ordinary text (no time limit here: on a starved CPU the 5 ms budget may run out,
    // and the rest is then counted by bytes, which errs high).
    const words = 'lorem ipsum dolor sit amet '.repeat(400);
    expect(countTextTokens(words, newBudget(EXACT_BUDGET_CHARS, Number.POSITIVE_INFINITY))).toBe(
      encode(words).length,
    );
    expect(countTextTokens(words)).toBeGreaterThanOrEqual(encode(words).length);
  });

  // gpt-tokenizer's BPE is quadratic on a run without whitespace ('q' × 100k: ~7 s) and costs
  // ~2-5 µs per character of new text. Each shape is counted in well under 50 ms of CPU, never below the
  // exact count (checked on a prefix the tokenizer can afford).
  // The random runs are new each run; the seed is in each test's name, TOKENS_SEED=<seed> replays it.
  const SEED = Number(process.env.TOKENS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const rand = seededRandom(SEED);
  const random = (n: number, alphabet: string) => {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
    return s;
  };
  const adversarial: [string, string][] = [
    ['one letter run', 'q'.repeat(200_000)],
    ['random letter run', random(200_000, 'abcdefghijklmnopqrstuvwxyz')],
    ['random CJK run', random(200_000, '漢字中文日本語한국어')],
    ['emoji run', '😀'.repeat(100_000)],
    ['punctuation run', '!'.repeat(200_000)],
    ['mixed case run', 'aB'.repeat(100_000)],
    ['random words', random(200_000, 'abcdefghijklmnopqrstuvwxyz     ')],
  ];
  for (const [name, text] of adversarial) {
    it(`counts a ${name} of ${text.length} chars in bounded time, never below the exact count (seed ${SEED})`, () => {
      countTextTokens(text.slice(0, 100)); // warm up
      const [n, ms] = cpuMsOf(() => countTextTokens(text));
      expect(ms).toBeLessThan(50);
      expect(n).toBeLessThanOrEqual(Buffer.byteLength(text) + text.length / MAX_RUN_CHARS);
      const prefix = text.slice(0, 4_000);
      expect(countTextTokens(prefix)).toBeGreaterThanOrEqual(encode(prefix).length);
    });
  }

  it('caps the tokenized characters of one count; the rest is counted by UTF-8 bytes', () => {
    const words = 'lorem ipsum dolor sit amet '.repeat(4_000); // 108k chars
    const budget = newBudget();
    const n = countTextTokens(words, budget);
    expect(budget.used).toBeLessThanOrEqual(EXACT_BUDGET_CHARS);
    expect(n).toBeGreaterThan(encode(words).length);
    // A spent time budget: past the first ALWAYS_EXACT_CHARS, only bytes are counted.
    const spent = newBudget(EXACT_BUDGET_CHARS, -1);
    expect(countTextTokens(words, spent)).toBeGreaterThanOrEqual(Buffer.byteLength(words) - spent.used);
    expect(spent.used).toBeLessThanOrEqual(ALWAYS_EXACT_CHARS + MAX_PIECE_CHARS);
  });

  it('shares one budget across all fields of a prompt (a long name, role or tool arguments)', () => {
    const messages = [
      { role: 'q'.repeat(150_000), content: 'x' },
      { role: 'user', name: 'n'.repeat(150_000), content: [{ type: 'text', text: 'p'.repeat(150_000) }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', function: { name: 'f', arguments: 'a'.repeat(150_000) } }],
      },
      { role: 'tool', tool_call_id: 'i'.repeat(150_000), content: 'ok' },
    ];
    const [n, ms] = cpuMsOf(() => estimatePromptTokens(messages));
    expect(ms).toBeLessThan(50);
    expect(n).toBeGreaterThan(150_000);
  });
});

describe('estimatePromptTokens', () => {
  it('adds the per-message overhead, then a 5% margin rounded up', () => {
    const messages = [{ role: 'user', content: 'Hello' }];
    const exact = 3 + 3 + encode('user').length + encode('Hello').length;
    expect(countPromptTokens(messages)).toBe(exact);
    expect(estimatePromptTokens(messages)).toBe(exact + Math.ceil(exact * 0.05));
  });

  it('reads content parts with text, names and tool calls, and leaves media to the per-model bounds', () => {
    const parts = estimatePromptTokens([{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }]);
    expect(parts).toBe(estimatePromptTokens([{ role: 'user', content: 'Hello' }]));
    // Images and documents count what the serving model's catalog bounds say (services/proxy
    // pipeline/bound.ts), not a flat figure here: their base64 or URL text is not their price.
    const empty = countPromptTokens([{ role: 'user', content: [] }]);
    for (const part of [
      { type: 'image_url', image_url: { url: 'https://x/y.png' } },
      { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
      { type: 'file', file: { file_data: `data:application/pdf;base64,${'A'.repeat(10_000)}` } },
      { type: 'document', source: { type: 'base64', data: 'AAAA' } },
    ]) {
      expect(countPromptTokens([{ role: 'user', content: [part] }])).toBe(empty);
    }
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

describe('memory', () => {
  it('keeps no prompt alive: the tokenizer caches pre-tokens of its own copy of a piece, not views of the prompt', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heapAfterGc = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const filler = 'the quick brown fox jumps over the lazy dog and keeps running '.repeat(1000);
    // A pre-token of 13+ characters that needs merging (not one o200k token), different in every prompt.
    const rare = (i: number) =>
      [...i.toString(26)].map((c) => String.fromCharCode(97 + Number.parseInt(c, 26))).join('');
    const before = heapAfterGc();
    for (let i = 0; i < 200; i++) {
      // A new 125 KB prompt each time, as JSON.parse makes a request's content.
      const prompt = JSON.parse(
        JSON.stringify(`Zqxvbnmkjhgf${rare(i)}plokijuhyg ${filler}${filler}`),
      ) as string;
      expect(countTextTokens(prompt)).toBeGreaterThan(0);
    }
    // Before: each prompt stayed alive through one cached pre-token (200 × 125 KB ≈ 24 MB).
    expect(heapAfterGc() - before).toBeLessThan(4 * 2 ** 20);
  });
});
