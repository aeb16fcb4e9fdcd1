import { describe, expect, it } from 'vitest';
import { headerText, safeText } from './index';

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

describe('headerText', () => {
  const asNodeReadsIt = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
  it('decodes the UTF-8 bytes Node read as Latin-1', () => {
    expect(headerText(asNodeReadsIt('Café bot ✓'))).toBe('Café bot ✓');
    expect(headerText(asNodeReadsIt('日本語 😀'))).toBe('日本語 😀');
  });
  it('keeps ASCII, real Latin-1 and already-decoded text, and bounds the length', () => {
    expect(headerText('plain')).toBe('plain');
    expect(headerText('caf\u00e9')).toBe('caf\u00e9'); // one Latin-1 byte, not valid UTF-8
    expect(headerText('✓ done')).toBe('✓ done');
    expect(headerText(asNodeReadsIt('é'.repeat(300)), 200)).toBe('é'.repeat(200));
  });
});
