import { describe, expect, it } from 'vitest';
import { ProducedText, RAW_KEEP_CHARS, TEXT_KEEP_CHARS } from './usage';

const chunk = (content: string) =>
  JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });

/** Characters of string data a ProducedText holds (private fields read for the memory bound). */
function heldChars(p: ProducedText): number {
  const inner = p as unknown as { raw: string[]; text: string };
  return inner.raw.reduce((n, s) => n + s.length, 0) + inner.text.length;
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
});
