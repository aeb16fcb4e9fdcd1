import { describe, expect, it } from 'vitest';
import { costMemo, costUnits } from './event-cost';

describe('event cost', () => {
  it('parses up to 10 decimals exactly and rounds more decimals up, never down', () => {
    expect(costUnits('0.0000000001')).toBe(1n);
    expect(costUnits('12.5')).toBe(125_000_000_000n);
    expect(costUnits('0.00000000010')).toBe(1n); // trailing zero: nothing to round
    expect(costUnits('0.00000000011')).toBe(2n);
    expect(costUnits('1.000000000000001')).toBe(10_000_000_001n);
  });

  it('memoises per batch and normalises the decimal recorded', () => {
    const cost = costMemo();
    const a = cost('0.50');
    expect(a).toEqual({ units: 5_000_000_000n, decimal: '0.5' });
    expect(cost('0.50')).toBe(a);
    expect(cost('0.00000000011').decimal).toBe('0.0000000002');
  });
});
