import { describe, expect, it } from 'vitest';
import { csvCell } from './csv';

describe('csvCell (spreadsheet formula guard)', () => {
  it.each([
    ['=1+2', `"'=1+2"`],
    ['+1+2', `"'+1+2"`],
    ['@SUM(A1)', `"'@SUM(A1)"`],
    ['\tx', `"'\tx"`],
    ['\rx', `"'\rx"`],
    // A minus and a digit: still a formula (it escaped the guard before).
    ['-1+HYPERLINK("http://evil.example","x")', `"'-1+HYPERLINK(""http://evil.example"",""x"")"`],
    ['-2', '"-2"'],
    ['-0.25', '"-0.25"'],
    ['+3.5', '"+3.5"'],
    ['0.0000003', '"0.0000003"'],
    ['Chat "bot"', '"Chat ""bot"""'],
    [null, '""'],
    [42, '"42"'],
  ])('%j → %s', (input, out) => {
    expect(csvCell(input)).toBe(out);
  });
});
