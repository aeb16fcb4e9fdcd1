import type { UsageRow } from '../../api';

/**
 * The Usage page's numbers, computed from the rows the dashboard answered (no React here): the
 * totals per group for the table and the chart's points per bucket.
 */

export type Metric = 'cost' | 'requests' | 'tokens';
export type GroupBy = 'none' | 'model' | 'app' | 'key' | 'team' | 'provider';
export const GROUP_BYS: readonly GroupBy[] = ['none', 'model', 'app', 'key', 'team', 'provider'];

export const DAY = 86_400_000;
export const RANGES = { '24h': 1, '7d': 7, '30d': 30, '90d': 90 } as const;
export type Range = keyof typeof RANGES;

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
export function usageWindow(days: number, granularity: 'hour' | 'day', now = Date.now()) {
  const unit = granularity === 'hour' ? 3_600_000 : DAY;
  const to = new Date(Math.ceil((now + 1) / unit) * unit);
  const from = new Date(to.getTime() - days * DAY);
  return { unit, from, to };
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
