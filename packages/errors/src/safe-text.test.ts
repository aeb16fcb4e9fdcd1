import { describe, expect, it } from 'vitest';
import { safeText } from './index';

const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

describe('safeText', () => {
  it('never cuts a surrogate pair in half', () => {
    const s = `${'a'.repeat(499)}😀tail`;
    expect(s.slice(0, 500)).toHaveLength(500); // what a plain slice does: a lone high surrogate
    expect(wellFormed(s.slice(0, 500))).toBe(false);
    const cut = safeText(s, 500);
    expect(cut).toBe('a'.repeat(499));
    expect(safeText(s, 501)).toBe(`${'a'.repeat(499)}😀`);
  });

  it('repairs lone surrogates already in the text and leaves short text alone', () => {
    expect(safeText('x\ud83dy\udc00')).toBe('x\ufffdy\ufffd');
    expect(safeText('ok 😀', 10)).toBe('ok 😀');
  });
});
