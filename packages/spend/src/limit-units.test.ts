import { describe, expect, it } from 'vitest';
import { limitUnitsParser } from './limit-units';

describe('limitUnitsParser', () => {
  it('parses a decimal USD limit into units and keeps answering once its bounded cache starts over', () => {
    const parse = limitUnitsParser(2);
    expect(parse('10')).toBe(100_000_000_000n);
    expect(parse('0.0000000001')).toBe(1n);
    expect(parse('1.5')).toBe(15_000_000_000n); // third value: the cache starts over
    expect(parse('10')).toBe(100_000_000_000n);
  });
});
