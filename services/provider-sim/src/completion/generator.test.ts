import { encode } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { generatePieces, PIECES, piecesText, promptSeed } from './generator';

describe('deterministic completion text', () => {
  it('uses pieces that are each exactly one o200k token', () => {
    expect(PIECES.length).toBeGreaterThan(100);
    for (const p of PIECES) expect(encode(p), p).toHaveLength(1);
  });

  it('re-tokenizes to exactly the number of generated pieces', () => {
    for (let seed = 1; seed < 400; seed += 7) {
      const n = (seed % 90) + 1;
      const pieces = generatePieces(seed * 2654435761, n);
      expect(encode(piecesText(pieces)).length, piecesText(pieces)).toBe(n);
    }
  });

  it('depends only on the messages', () => {
    const a = promptSeed([{ role: 'user', content: 'hello' }]);
    expect(promptSeed([{ role: 'user', content: 'hello' }])).toBe(a);
    expect(promptSeed([{ role: 'user', content: [{ type: 'text', text: 'hello' }] }])).toBe(a);
    expect(promptSeed([{ role: 'system', content: 'hello' }])).not.toBe(a);
    expect(piecesText(generatePieces(a, 30))).toBe(piecesText(generatePieces(a, 30)));
  });
});
