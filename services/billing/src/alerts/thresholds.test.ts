import { toUnits } from '@tollgate/money';
import { describe, expect, it } from 'vitest';
import { creditBelow, percentOf, reachedThresholds, resetOfPeriod } from './thresholds';

const u = toUnits;

describe('threshold crossing math (exact units, never floats)', () => {
  it('reaches a threshold exactly at the boundary, in integer units', () => {
    // 0.1 + 0.2 of a 0.6 limit is exactly 50 %; in binary floats 0.1 + 0.2 = 0.30000000000000004.
    const spent = u('0.1') + u('0.2');
    expect(
      reachedThresholds([50, 80, 100], { spentUnits: spent, deltaUnits: u('0.2'), limitUnits: u('0.6') }),
    ).toEqual([50]);
    // One unit (1e-10 USD) below 80 % is not 80 %.
    const limit = u('12.3456789');
    const eighty = (limit * 80n) / 100n; // exact: 12.3456789 × 0.8 = 9.87654312
    expect(eighty * 100n).toBe(limit * 80n);
    const below = { spentUnits: eighty - 1n, deltaUnits: 1n, limitUnits: limit };
    expect(reachedThresholds([50, 80, 100], below)).toEqual([50]);
    expect(reachedThresholds([50, 80, 100], { ...below, spentUnits: eighty })).toEqual([50, 80]);
  });

  it('handles amounts far beyond a double’s exact range', () => {
    const limit = u('999999999.9999999999');
    const r = reachedThresholds([100], { spentUnits: limit, deltaUnits: 1n, limitUnits: limit });
    expect(r).toEqual([100]);
    expect(reachedThresholds([100], { spentUnits: limit - 1n, deltaUnits: 1n, limitUnits: limit })).toEqual(
      [],
    );
  });

  it('decides nothing for a commit that added no spend (a redelivery) or a zero limit', () => {
    expect(reachedThresholds([50], { spentUnits: u('10'), deltaUnits: 0n, limitUnits: u('1') })).toEqual([]);
    expect(reachedThresholds([50], { spentUnits: u('10'), deltaUnits: 1n, limitUnits: 0n })).toEqual([]);
  });

  it('reports every reached threshold, in order, once each', () => {
    expect(
      reachedThresholds([100, 50, 80, 50], {
        spentUnits: u('1.2'),
        deltaUnits: u('1.2'),
        limitUnits: u('1'),
      }),
    ).toEqual([50, 80, 100]);
  });

  it('tells credits below the low-credit amount only after spend', () => {
    const f = { creditsUnits: u('10'), usageUnits: u('5.0000000001'), deltaUnits: 1n, lowUnits: u('5') };
    expect(creditBelow(f)).toBe(true);
    expect(creditBelow({ ...f, usageUnits: u('5') })).toBe(false); // exactly 5 left: not below
    expect(creditBelow({ ...f, deltaUnits: 0n })).toBe(false);
  });

  it('maps spend periods to their limit reset and prints percentages exactly', () => {
    expect(resetOfPeriod('d2026-11-26')).toBe('daily');
    expect(resetOfPeriod('w2026-W48')).toBe('weekly');
    expect(resetOfPeriod('m2026-11')).toBe('monthly');
    expect(resetOfPeriod('all')).toBeNull();
    expect(resetOfPeriod('x')).toBeUndefined();
    expect(percentOf(u('1'), u('3'))).toBe('33.33');
    expect(percentOf(u('0.3'), u('0.6'))).toBe('50.00');
  });
});
