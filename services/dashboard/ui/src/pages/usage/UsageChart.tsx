import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { int, usd } from '../../format';
import { displayZone, when } from '../../time';
import type { Metric } from './usage-data';

/** Series colours: each at least 4.5:1 against white (legend text is drawn in them). */
const COLORS = [
  '#1d4ed8',
  '#15803d',
  '#b45309',
  '#b91c1c',
  '#6d28d9',
  '#0e7490',
  '#be185d',
  '#4d7c0f',
  '#475569',
];

/** A legend entry of at most 40 characters (a 300-character X-Title would push the chart away). */
const shorten = (s: string) => (s.length > 40 ? `${s.slice(0, 39)}…` : s);

/** The usage chart: one bar per bucket, stacked by the top groups (the rest as "other"). */
export function UsageChart(props: {
  points: Record<string, number | string>[];
  series: readonly string[];
  hasOther: boolean;
  metric: Metric;
  granularity: 'hour' | 'day';
  labelOf: (group: string | null) => string;
}) {
  const { metric, granularity, labelOf } = props;
  // Buckets are UTC hours and days: axis ticks and the tooltip say so.
  const tick = (b: string) =>
    granularity === 'hour' ? `${b.slice(5, 10)} ${b.slice(11, 16)}` : b.slice(5, 10);
  const bucketLabel = (b: string) =>
    granularity === 'hour'
      ? `${b.slice(0, 10)} ${b.slice(11, 16)}–${String((Number(b.slice(11, 13)) + 1) % 24).padStart(2, '0')}:00 UTC${displayZone() === 'UTC' ? '' : ` (from ${when(b)})`}`
      : `${b.slice(0, 10)} (UTC day)`;
  const fmt = (v: number) => (metric === 'cost' ? usd(v) : int(v));
  return (
    <div className="card">
      <div className="chart" data-testid="usage-chart">
        <ResponsiveContainer width="100%" height={280}>
          <BarChart data={props.points} margin={{ left: 8, right: 8 }} maxBarSize={48}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} />
            <XAxis dataKey="bucket" tickFormatter={tick} minTickGap={16} />
            <YAxis tickFormatter={fmt} width={88} />
            <Tooltip formatter={(v) => fmt(Number(v))} labelFormatter={(l) => bucketLabel(String(l))} />
            <Legend />
            {props.series.map((g, i) => (
              <Bar
                key={g}
                dataKey={`s${i}`}
                name={shorten(labelOf(g === '' ? null : g))}
                stackId="a"
                fill={COLORS[i % COLORS.length]}
                isAnimationActive={false}
              />
            ))}
            {props.hasOther ? (
              <Bar dataKey="__other" name="other" stackId="a" fill={COLORS[8]} isAnimationActive={false} />
            ) : null}
          </BarChart>
        </ResponsiveContainer>
      </div>
    </div>
  );
}
