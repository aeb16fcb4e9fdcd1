import { describe, expect, it } from 'vitest';
import { costOf, isoWeek, periodEnd, periodKey, periodStart, toDecimal, toUnits } from './index';

describe('money', () => {
  it('round-trips decimal strings exactly', () => {
    for (const s of ['0', '1', '0.0000025', '12.5', '0.0000000001', '123456.789']) {
      expect(toDecimal(toUnits(s))).toBe(s);
    }
  });
  it('parses numbers in exponent notation exactly', () => {
    expect(toUnits(2.5e-7)).toBe(2500n);
    expect(toUnits(1e21)).toBe(10n ** 31n);
    expect(toUnits(0.1)).toBe(1_000_000_000n);
  });
  it('refuses more precision than it can hold, and non-numbers', () => {
    expect(() => toUnits('0.00000000001')).toThrow(/decimal places/);
    expect(toUnits('0.10000000000')).toBe(1_000_000_000n);
    expect(() => toUnits('abc')).toThrow();
    expect(() => toUnits(Number.NaN)).toThrow();
    expect(() => toUnits(Number.POSITIVE_INFINITY)).toThrow();
  });
  it('computes cost as tokens times price without float error', () => {
    // 0.1 + 0.2 style errors cannot happen: 3 tokens at $0.0000001 = $0.0000003
    expect(toDecimal(costOf(3, toUnits('0.0000001')))).toBe('0.0000003');
  });
});

describe('periods', () => {
  it('names UTC day, ISO week and month periods', () => {
    const at = new Date('2026-11-20T23:59:59.999Z');
    expect(periodKey('daily', at)).toBe('d2026-11-20');
    expect(periodKey('weekly', at)).toBe('w2026-W47');
    expect(periodKey('monthly', at)).toBe('m2026-11');
    expect(periodKey(null, at)).toBe('all');
  });
  it('starts weeks on Monday and handles ISO year boundaries', () => {
    expect(periodStart('weekly', new Date('2026-11-22T10:00:00Z')).toISOString()).toBe(
      '2026-11-16T00:00:00.000Z',
    );
    expect(periodStart('weekly', new Date('2026-11-23T00:00:00Z')).toISOString()).toBe(
      '2026-11-23T00:00:00.000Z',
    );
    expect(isoWeek(new Date('2027-01-01T00:00:00Z'))).toEqual({ year: 2026, week: 53 });
    expect(isoWeek(new Date('2024-12-30T00:00:00Z'))).toEqual({ year: 2025, week: 1 });
  });
  it('ends months on the first of the next month', () => {
    expect(periodEnd('monthly', new Date('2026-12-31T23:00:00Z'))?.toISOString()).toBe(
      '2027-01-01T00:00:00.000Z',
    );
    expect(periodEnd(null, new Date())).toBeNull();
  });
});
