import { describe, expect, it } from 'vitest';
import { accountLatency, accountUsage } from './billing-analytics';
import { accountErrors } from './refusals';

const DAY = 86_400_000;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
const issues = (r: {
  success: boolean;
  error?: { issues: Array<{ path: PropertyKey[]; message: string }> };
}) => (r.success ? [] : (r.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`));

describe('range queries (usage, errors, latency): one check of from/to', () => {
  it('refuses a range that ends before it starts, on every range query', () => {
    for (const query of [accountUsage.query, accountErrors.query, accountLatency.query])
      expect(issues(query.safeParse({ from: at(DAY), to: at(0) }))).toEqual(['to: must be after from']);
  });

  it('bounds the span by bucket size: hourly at most 31 days, daily about 3 years', () => {
    const hourly = { from: at(0), to: at(32 * DAY), granularity: 'hour' };
    expect(issues(accountUsage.query.safeParse(hourly))).toEqual(['to: range too long for granularity hour']);
    expect(issues(accountErrors.query.safeParse(hourly))).toEqual([
      'to: range too long for granularity hour',
    ]);
    expect(issues(accountUsage.query.safeParse({ ...hourly, to: at(31 * DAY) }))).toEqual([]);
    expect(issues(accountErrors.query.safeParse({ ...hourly, granularity: 'day' }))).toEqual([]);
    expect(
      issues(accountErrors.query.safeParse({ ...hourly, to: at(1101 * DAY), granularity: 'day' })),
    ).toEqual(['to: range too long for granularity day']);
    expect(issues(accountLatency.query.safeParse({ from: at(0), to: at(32 * DAY) }))).toEqual([
      'to: range too long (at most 31 days)',
    ]);
  });
});
