import { describe, expect, it } from 'vitest';
import { keptPart, PACK_EVERY, ProducedText, RAW_KEEP_CHARS, TEXT_KEEP_CHARS } from './usage';

const chunk = (content: string) =>
  JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

/** Characters of string data a ProducedText holds (private fields read for the memory bound). */
function heldChars(p: ProducedText): number {
  const inner = p as unknown as { packed: string[]; pending: string[]; text: string };
  return [...inner.packed, ...inner.pending].reduce((n, s) => n + s.length, 0) + inner.text.length;
}

describe('ProducedText (bounded memory per stream, issue 14 finding 7)', () => {
  it('keeps what the estimate needs, not every chunk: memory stays bounded over a 20 MB stream', () => {
    const p = new ProducedText();
    const piece = 'word '.repeat(40); // 200 chars of content per chunk
    const chunks = 100_000; // 20M chars of content
    let maxHeld = 0;
    for (let i = 0; i < chunks; i++) {
      p.addChunk(chunk(piece));
      if (i % 1000 === 0) maxHeld = Math.max(maxHeld, heldChars(p));
    }
    expect(maxHeld).toBeLessThanOrEqual(RAW_KEEP_CHARS + 1_000 + TEXT_KEEP_CHARS);
    const r = p.result();
    expect(r.text).toHaveLength(TEXT_KEEP_CHARS);
    // Everything beyond the kept text is counted, in UTF-8 bytes.
    expect(r.text.length + r.overflowBytes).toBe(piece.length * chunks);
  });

  it('returns the whole text of a short stream and never keeps half a surrogate pair', () => {
    const p = new ProducedText();
    p.addChunk(chunk('Hello'));
    p.addChunk(chunk(' world'));
    expect(p.result()).toEqual({ text: 'Hello world', overflowBytes: 0 });
    const q = new ProducedText();
    q.addChunk(chunk('a'.repeat(TEXT_KEEP_CHARS - 1)));
    q.addChunk(chunk('😀'.repeat(RAW_KEEP_CHARS)));
    const r = q.result();
    expect(r.text).toBe('a'.repeat(TEXT_KEEP_CHARS - 1));
    expect(r.overflowBytes).toBe(4 * RAW_KEEP_CHARS);
  });

  // An OpenAI chunk as sent with include_usage (every member it carries today).
  const openai = (content: string) =>
    JSON.stringify({
      id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
      object: 'chat.completion.chunk',
      created: 1741570283,
      model: 'gpt-4o-2024-08-06',
      service_tier: 'default',
      system_fingerprint: 'fp_fc9f1d7035',
      choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }],
      usage: null,
      obfuscation: 'abcdEF',
    });
  /** What the estimate counted before ProducedText kept parts: every whole chunk parsed. */
  const reference = (chunks: string[]) => {
    let text = '';
    for (const c of chunks) {
      let parsed: { choices?: Array<{ delta?: Record<string, unknown> }> };
      try {
        parsed = JSON.parse(c);
      } catch {
        continue;
      }
      for (const choice of parsed.choices ?? []) {
        const d = choice.delta ?? {};
        for (const k of ['content', 'reasoning', 'reasoning_content', 'refusal'])
          if (typeof d[k] === 'string') text += d[k];
        for (const call of (d.tool_calls as Array<{ function?: Record<string, unknown> }>) ?? []) {
          if (typeof call.function?.name === 'string') text += call.function.name;
          if (typeof call.function?.arguments === 'string') text += call.function.arguments;
        }
      }
    }
    return text;
  };

  it('keeps only the choices of a chunk whose top-level members before them are primitive', () => {
    const c = openai(' world');
    expect(keptPart(c)).toBe(c.slice(c.indexOf('"choices":')));
    // A nested object or array before the key, a key spelled with spaces, no leading brace: whole.
    for (const whole of [
      '{"id":"x","meta":{"choices":[1]},"choices":[{"delta":{"content":"a"}}]}',
      '{"id":"x","tags":["a"],"choices":[{"delta":{"content":"a"}}]}',
      '{"id":"x{","choices":[{"delta":{"content":"a"}}]}',
      '{"id":"x","choices" : [{"delta":{"content":"a"}}]}',
      ' {"id":"x","choices":[{"delta":{"content":"a"}}]}',
    ])
      expect(keptPart(whole)).toBe(whole);
    // A raw control character: not JSON, never counted.
    expect(keptPart('{"id":"x","choices":[{"delta":{"content":"a\x1eb"}}]}')).toBeNull();
  });

  it('estimates the same text as parsing every whole chunk, whatever the chunks look like', () => {
    const chunks = [
      openai('Hello'),
      openai(' "quoted" {braces} [brackets] "choices": \u00e9\ud83d\ude00'),
      '{"id":"x","meta":{"choices":[{"delta":{"content":"NOT THIS"}}]},"choices":[{"delta":{"content":" nested-before"}}]}',
      '{"id":"x","choices":[{"delta":{"content":" first"}}],"choices":[{"delta":{"content":" last-wins"}}]}',
      '{"id":"x","choices" : [{"delta":{"content":" spaced"}}]}',
      '{"id":"x","choices":[{"delta":{"reasoning":" r","tool_calls":[{"function":{"name":" f","arguments":"{}"}}]}}]}',
      '{"id":"x","choices":[{"delta":{"content":" two"}},{"delta":{"refusal":" choices"}}]}',
      '{"id":"x","choices":[{"delta":{"content":"\\u00e9 escaped"}}]}',
      '{"id":"x","choices":[{"delta":{"content":"a\x1eb"}}]}',
      '{"id":"x", not json',
      '{"id":"x","object":"chat.completion.chunk","choices":[]}',
    ];
    // Repeated past PACK_EVERY (packed blocks) and past RAW_KEEP_CHARS (folds in between).
    const stream = Array.from({ length: 40 * PACK_EVERY }, (_, i) => chunks[i % chunks.length] as string);
    const p = new ProducedText();
    for (const c of stream) p.addChunk(c);
    expect(p.result()).toEqual({ text: reference(stream), overflowBytes: 0 });
  });

  it('holds the choices of a chunk, not the whole chunk, while a stream is open', () => {
    const p = new ProducedText();
    const c = openai('tok ');
    const n = 3 * PACK_EVERY;
    for (let i = 0; i < n; i++) p.addChunk(c);
    const kept = c.length - c.indexOf('"choices":');
    expect(heldChars(p)).toBeLessThanOrEqual(n * (kept + 1));
    expect(heldChars(p)).toBeLessThan((n * c.length) / 2);
    expect(p.result().text).toBe('tok '.repeat(n));
  });
});
