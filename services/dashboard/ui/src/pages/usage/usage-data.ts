import type { DashboardData } from '@tollgate/contracts';
import type { UsageRow } from '../../api';

/**
 * The Usage page's numbers, computed from the rows the dashboard answered (no React here): the
 * totals per group for the table and the chart's points per bucket.
 */

export type Metric = 'cost' | 'requests' | 'tokens';
/** The usage API's groupings (its contract); GROUP_BYS is their order in the controls. */
export type GroupBy = DashboardData<'usage'>['group_by'];
export const GROUP_BYS = [
  'none',
  'model',
  'app',
  'key',
  'team',
  'provider',
] as const satisfies readonly GroupBy[];

export const DAY = 86_400_000;
export const RANGES = { '24h': 1, '7d': 7, '30d': 30, '90d': 90 } as const;
/** A preset (the last N days up to now) or `custom`: whole UTC days picked in the controls. */
export type Range = keyof typeof RANGES | 'custom';
/** Longest custom range (the usage API's bound for daily buckets). */
const MAX_CUSTOM_DAYS = 1100;

/** Groups the chart stacks by name (the rest summed as "other"). */
export const CHART_SERIES = 8;

export interface Totals {
  group: string;
  label: string;
  requests: number;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_reasoning: number;
  cost: number;
}

const metricOf = (r: UsageRow, m: Metric) =>
  m === 'cost' ? Number(r.cost) : m === 'requests' ? r.requests : r.tokens_prompt + r.tokens_completion;

/** Whole hours or days up to the end of the current one, `days` long. */
function usageWindow(days: number, granularity: 'hour' | 'day', now = Date.now()) {
  const unit = granularity === 'hour' ? 3_600_000 : DAY;
  const to = new Date(Math.ceil((now + 1) / unit) * unit);
  const from = new Date(to.getTime() - days * DAY);
  return { unit, from, to };
}

/** `YYYY-MM-DD` of the UTC day `ms` falls in. */
export const utcDayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * A custom range: the UTC days `fromDay` to `toDay` inclusive (`YYYY-MM-DD`, the date inputs' values),
 * as instants [from, to); or why it is not a range.
 */
export function dayWindow(fromDay: string, toDay: string): { from: Date; to: Date } | { error: string } {
  const from = Date.parse(`${fromDay}T00:00:00Z`);
  const last = Date.parse(`${toDay}T00:00:00Z`);
  if (Number.isNaN(from) || Number.isNaN(last)) return { error: 'Pick both days of the range.' };
  if (last < from) return { error: 'The range ends before it starts: pick a "to" day on or after "from".' };
  const to = last + DAY;
  if (to - from > MAX_CUSTOM_DAYS * DAY) return { error: `A range is at most ${MAX_CUSTOM_DAYS} days.` };
  return { from: new Date(from), to: new Date(to) };
}

/**
 * The window the page shows: a preset's last N days up to the end of the current bucket, or a custom
 * range of whole UTC days; hourly buckets only up to 31 days (the API's bound), else daily.
 */
export function viewWindow(
  view: { range: Range; granularity: 'hour' | 'day'; fromDay: string; toDay: string },
  now = Date.now(),
): { unit: number; from: Date; to: Date; granularity: 'hour' | 'day'; error: string | null } {
  if (view.range !== 'custom') {
    const days = RANGES[view.range];
    const granularity = days > 31 ? 'day' : view.granularity;
    return { ...usageWindow(days, granularity, now), granularity, error: null };
  }
  const w = dayWindow(view.fromDay, view.toDay);
  if ('error' in w) {
    // Nothing valid picked yet: the last 7 days meanwhile (the controls say what is wrong).
    return { ...usageWindow(7, view.granularity, now), granularity: view.granularity, error: w.error };
  }
  const granularity = w.to.getTime() - w.from.getTime() > 31 * DAY ? 'day' : view.granularity;
  return { unit: granularity === 'hour' ? 3_600_000 : DAY, ...w, granularity, error: null };
}

/** One row per group, the most spend first (then the most requests). */
export function totalsOf(rows: readonly UsageRow[], labelOf: (group: string | null) => string): Totals[] {
  const m = new Map<string, Totals>();
  for (const r of rows) {
    const g = r.group ?? '';
    const t = m.get(g) ?? {
      group: g,
      label: labelOf(r.group),
      requests: 0,
      tokens_prompt: 0,
      tokens_completion: 0,
      tokens_cached: 0,
      tokens_reasoning: 0,
      cost: 0,
    };
    t.requests += r.requests;
    t.tokens_prompt += r.tokens_prompt;
    t.tokens_completion += r.tokens_completion;
    t.tokens_cached += r.tokens_cached;
    t.tokens_reasoning += r.tokens_reasoning;
    t.cost += Number(r.cost);
    m.set(g, t);
  }
  return [...m.values()].sort((a, b) => b.cost - a.cost || b.requests - a.requests);
}

/**
 * The chart's points: one per bucket of the range (empty buckets are zero, so the axis shows the
 * whole range), each group of `series` as `s<i>`, the rest summed as `__other`.
 */
export function chartPoints(
  rows: readonly UsageRow[],
  series: readonly string[],
  metric: Metric,
  window: { from: string; to: number; unit: number },
): Record<string, number | string>[] {
  const byBucket = new Map<string, Record<string, number | string>>();
  for (let t = new Date(window.from).getTime(); t < window.to; t += window.unit) {
    const b = new Date(t).toISOString();
    byBucket.set(b, { bucket: b });
  }
  for (const r of rows) {
    const b = r.bucket ? new Date(r.bucket).toISOString() : '';
    const point = byBucket.get(b) ?? { bucket: b };
    const i = series.indexOf(r.group ?? '');
    const g = i >= 0 ? `s${i}` : '__other';
    point[g] = Number(point[g] ?? 0) + metricOf(r, metric);
    byBucket.set(b, point);
  }
  return [...byBucket.values()].sort((a, b) => String(a.bucket).localeCompare(String(b.bucket)));
}
