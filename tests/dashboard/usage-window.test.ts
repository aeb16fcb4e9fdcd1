/**
 * The Usage page's window (services/dashboard/ui/src/pages/usage/usage-data.ts): presets end with the
 * current bucket; a custom range is whole UTC days, inclusive, hourly only up to 31 days, and a range
 * that is not one says why instead of asking the API.
 */
import { describe, expect, it } from 'vitest';
import { dayWindow, viewWindow } from '../../services/dashboard/ui/src/pages/usage/usage-data';

const NOW = Date.parse('2026-11-26T17:20:00Z');
const view = (v: Partial<Parameters<typeof viewWindow>[0]>) => ({
  range: 'custom' as const,
  granularity: 'hour' as const,
  fromDay: '2026-11-01',
  toDay: '2026-11-03',
  ...v,
});

describe('usage window', () => {
  it('a preset is the last N days up to the end of the current bucket', () => {
    const w = viewWindow(view({ range: '7d' }), NOW);
    expect(w.to.toISOString()).toBe('2026-11-26T18:00:00.000Z');
    expect(w.from.toISOString()).toBe('2026-11-19T18:00:00.000Z');
    expect(w).toMatchObject({ granularity: 'hour', error: null });
    expect(viewWindow(view({ range: '90d' }), NOW).granularity).toBe('day');
  });

  it('a custom range is its UTC days, the last one included', () => {
    const w = viewWindow(view({}), NOW);
    expect(w.from.toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(w.to.toISOString()).toBe('2026-11-04T00:00:00.000Z');
    expect(w).toMatchObject({ granularity: 'hour', unit: 3_600_000, error: null });
    const one = dayWindow('2026-11-26', '2026-11-26');
    expect(one).toEqual({ from: new Date('2026-11-26T00:00:00Z'), to: new Date('2026-11-27T00:00:00Z') });
  });

  it('past 31 days a custom range has daily buckets', () => {
    const w = viewWindow(view({ fromDay: '2026-01-01', toDay: '2026-11-26' }), NOW);
    expect(w).toMatchObject({ granularity: 'day', unit: 86_400_000, error: null });
  });

  it('says why a custom range is not one (reversed, missing, too long) and shows the last 7 days meanwhile', () => {
    expect(dayWindow('2026-11-05', '2026-11-01')).toEqual({
      error: expect.stringMatching(/ends before it starts/),
    });
    expect(dayWindow('', '2026-11-01')).toEqual({ error: 'Pick both days of the range.' });
    expect(dayWindow('2020-01-01', '2026-11-01')).toEqual({ error: 'A range is at most 1100 days.' });
    const w = viewWindow(view({ fromDay: '2026-11-05', toDay: '2026-11-01' }), NOW);
    expect(w.error).toMatch(/ends before it starts/);
    expect(w.to.getTime() - w.from.getTime()).toBe(7 * 86_400_000);
  });
});
