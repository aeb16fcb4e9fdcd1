import { describe, expect, it } from 'vitest';
import { parseByteLimit } from './json-body';

describe('parseByteLimit', () => {
  it('reads sizes with units', () => {
    expect(parseByteLimit('10mb')).toBe(10 * 1024 * 1024);
    expect(parseByteLimit('512kb')).toBe(512 * 1024);
    expect(parseByteLimit('100')).toBe(100);
    expect(parseByteLimit('1.5 MB')).toBe(1.5 * 1024 * 1024);
    expect(() => parseByteLimit('big')).toThrow(/invalid byte size/);
  });
});
