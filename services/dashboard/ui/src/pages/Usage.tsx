import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useCallback, useMemo, useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { get, type UsageRow } from '../api';
import { DataTable } from '../components/DataTable';
import { Clip, ErrorBox, Page } from '../components/ui';
import { int, usd, usdColumn } from '../format';
import { displayZone, when } from '../time';
import { ErrorsSection } from './usage/Errors';
import { LatencyTable } from './usage/Latency';

type Metric = 'cost' | 'requests' | 'tokens';
type GroupBy = 'none' | 'model' | 'app' | 'key' | 'team' | 'provider';
const GROUPS: GroupBy[] = ['none', 'model', 'app', 'key', 'team', 'provider'];
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
const DAY = 86_400_000;
const RANGES = { '24h': 1, '7d': 7, '30d': 30, '90d': 90 } as const;

const metricOf = (r: UsageRow, m: Metric) =>
  m === 'cost' ? Number(r.cost) : m === 'requests' ? r.requests : r.tokens_prompt + r.tokens_completion;

interface Totals {
  group: string;
  label: string;
  requests: number;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_reasoning: number;
  cost: number;
}
const col = createColumnHelper<Totals>();

/** A legend entry of at most 40 characters (a 300-character X-Title would push the chart away). */
const shorten = (s: string) => (s.length > 40 ? `${s.slice(0, 39)}…` : s);

/**
 * Usage analytics over billing's roll-ups. A team viewer (`member`) sees their teams' totals: the
 * grouping is fixed to team (the server answers only their teams' rows), without the account-wide
 * latency and error sections.
 */
export function UsagePage(props: { params: URLSearchParams; member?: boolean }) {
  const [range, setRange] = useState<keyof typeof RANGES>('30d');
  const [granularity, setGranularity] = useState<'hour' | 'day'>('day');
  const initialGroup = props.params.get('group_by');
  const [chosenGroup, setGroupBy] = useState<GroupBy>(
    initialGroup && GROUPS.includes(initialGroup as GroupBy) ? (initialGroup as GroupBy) : 'model',
  );
  const groupBy: GroupBy = props.member ? 'team' : chosenGroup;
  const [metric, setMetric] = useState<Metric>('cost');
  const days = RANGES[range];
  const effectiveGranularity = days > 31 ? 'day' : granularity;
  // Whole hours/days up to the end of the current one.
  const unit = effectiveGranularity === 'hour' ? 3_600_000 : DAY;
  const to = new Date(Math.ceil((Date.now() + 1) / unit) * unit);
  const from = new Date(to.getTime() - days * DAY);
  const query = `from=${from.toISOString()}&to=${to.toISOString()}&granularity=${effectiveGranularity}&group_by=${groupBy}`;

  const usage = useQuery({
    queryKey: ['usage', query],
    queryFn: async () => (await get<DashboardAnswer<'usage'>>(`/api/usage?${query}`)).data,
    refetchInterval: 10_000,
  });
  const keys = useQuery({
    queryKey: ['keys', true],
    queryFn: async () => (await get<DashboardAnswer<'keys'>>('/api/keys?include_revoked=true')).data,
    enabled: groupBy === 'key',
  });
  const teams = useQuery({
    queryKey: ['teams'],
    queryFn: async () => (await get<DashboardAnswer<'teams'>>('/api/teams')).data,
    enabled: groupBy === 'team',
  });
  const keyName = useMemo(() => {
    const names = new Map((keys.data ?? []).map((k) => [k.hash, k.name]));
    for (const t of teams.data ?? []) names.set(t.id, t.name);
    return names;
  }, [keys.data, teams.data]);
  const labelOf = useCallback(
    (g: string | null) =>
      groupBy === 'none'
        ? 'All'
        : g === null
          ? groupBy === 'app'
            ? '(no X-Title)'
            : groupBy === 'team'
              ? '(no team)'
              : '—'
          : groupBy === 'key' || groupBy === 'team'
            ? (keyName.get(g) ?? g.slice(0, 8))
            : g,
    [groupBy, keyName],
  );

  const rows = usage.data?.rows ?? [];
  const truncated = (usage.data?.next_offset ?? null) !== null;
  const totals = useMemo(() => {
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
  }, [rows, labelOf]);

  // Chart: one bar per bucket, stacked by the top 8 groups (the rest summed as "other").
  const series = totals.slice(0, 8).map((t) => t.group);
  const fromIso = from.toISOString();
  const toMs = to.getTime();
  const chartData = useMemo(() => {
    // Every bucket of the range, so the axis shows the whole range (empty buckets are zero).
    const byBucket = new Map<string, Record<string, number | string>>();
    for (let t = new Date(fromIso).getTime(); t < toMs; t += unit) {
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
  }, [rows, metric, series, fromIso, toMs, unit]);
  const hasOther = totals.length > 8;

  const cost = usdColumn(totals.map((t) => t.cost.toFixed(8)));
  const columns = [
    col.accessor('label', {
      header: groupBy === 'none' ? 'Total' : groupBy[0]!.toUpperCase() + groupBy.slice(1),
      cell: (c) => <Clip text={c.getValue()} />,
    }),
    col.accessor('requests', { header: 'Requests', cell: (c) => int(c.getValue()), meta: { numeric: true } }),
    col.accessor('tokens_prompt', {
      header: 'Prompt tokens',
      cell: (c) => int(c.getValue()),
      meta: { numeric: true },
    }),
    col.accessor('tokens_completion', {
      header: 'Completion tokens',
      cell: (c) => int(c.getValue()),
      meta: { numeric: true },
    }),
    col.accessor('tokens_cached', {
      header: 'Cached',
      cell: (c) => int(c.getValue()),
      meta: { numeric: true },
    }),
    col.accessor('cost', { header: 'Cost', cell: (c) => cost(c.getValue()), meta: { numeric: true } }),
  ];

  // Buckets are UTC hours and days: axis ticks and the tooltip say so.
  const tick = (b: string) =>
    effectiveGranularity === 'hour' ? `${b.slice(5, 10)} ${b.slice(11, 16)}` : b.slice(5, 10);
  const bucketLabel = (b: string) =>
    effectiveGranularity === 'hour'
      ? `${b.slice(0, 10)} ${b.slice(11, 16)}–${String((Number(b.slice(11, 13)) + 1) % 24).padStart(2, '0')}:00 UTC${displayZone() === 'UTC' ? '' : ` (from ${when(b)})`}`
      : `${b.slice(0, 10)} (UTC day)`;
  const fmt = (v: number) => (metric === 'cost' ? usd(v) : int(v));

  return (
    <Page
      title="Usage"
      actions={
        <a
          className="button secondary"
          href={`/api/usage?${query}&format=csv`}
          download
          data-testid="csv-export"
        >
          Export CSV
        </a>
      }
    >
      <fieldset className="card controls" aria-label="Usage controls">
        <label>
          Range
          <select value={range} onChange={(e) => setRange(e.target.value as keyof typeof RANGES)}>
            {Object.keys(RANGES).map((r) => (
              <option key={r} value={r}>
                last {r} (UTC)
              </option>
            ))}
          </select>
        </label>
        <label>
          By
          <select
            value={effectiveGranularity}
            disabled={days > 31}
            onChange={(e) => setGranularity(e.target.value as 'hour' | 'day')}
          >
            <option value="hour">hour</option>
            <option value="day">day</option>
          </select>
        </label>
        <label>
          Group by
          <select
            value={groupBy}
            onChange={(e) => setGroupBy(e.target.value as GroupBy)}
            aria-label="Group by"
            disabled={props.member}
          >
            <option value="none">nothing</option>
            <option value="model">model</option>
            <option value="app">app (X-Title)</option>
            <option value="key">key</option>
            <option value="team">team</option>
            <option value="provider">provider</option>
          </select>
        </label>
        <label>
          Show
          <select value={metric} onChange={(e) => setMetric(e.target.value as Metric)}>
            <option value="cost">spend</option>
            <option value="requests">requests</option>
            <option value="tokens">tokens</option>
          </select>
        </label>
      </fieldset>
      <p className="muted small">
        Buckets are UTC {effectiveGranularity === 'hour' ? 'hours' : 'days'}; a range ends with the current
        one.
      </p>
      <ErrorBox error={usage.error} onRetry={() => usage.refetch()} />
      <div className="card">
        <div className="chart" data-testid="usage-chart">
          <ResponsiveContainer width="100%" height={280}>
            <BarChart data={chartData} margin={{ left: 8, right: 8 }} maxBarSize={48}>
              <CartesianGrid strokeDasharray="3 3" vertical={false} />
              <XAxis dataKey="bucket" tickFormatter={tick} minTickGap={16} />
              <YAxis tickFormatter={fmt} width={88} />
              <Tooltip formatter={(v) => fmt(Number(v))} labelFormatter={(l) => bucketLabel(String(l))} />
              <Legend />
              {series.map((g, i) => (
                <Bar
                  key={g}
                  dataKey={`s${i}`}
                  name={shorten(labelOf(g === '' ? null : g))}
                  stackId="a"
                  fill={COLORS[i % COLORS.length]}
                  isAnimationActive={false}
                />
              ))}
              {hasOther ? (
                <Bar dataKey="__other" name="other" stackId="a" fill={COLORS[8]} isAnimationActive={false} />
              ) : null}
            </BarChart>
          </ResponsiveContainer>
        </div>
      </div>
      {truncated ? (
        <p className="muted small" data-testid="top-groups">
          The {int(totals.length)} groups with the most spend in this range; the CSV export has them all.
        </p>
      ) : null}
      <DataTable
        label="Usage by group"
        data={totals}
        columns={columns}
        loading={usage.isPending}
        empty="No usage in this range."
        rowTestId={(t) => `usage-${t.label}`}
      />
      {!props.member && (
        <>
          <LatencyTable
            from={new Date(Math.max(from.getTime(), to.getTime() - 31 * DAY)).toISOString()}
            to={to.toISOString()}
            groupBy={groupBy === 'provider' ? 'provider' : 'model'}
          />
          <ErrorsSection from={from.toISOString()} to={to.toISOString()} />
        </>
      )}
    </Page>
  );
}
