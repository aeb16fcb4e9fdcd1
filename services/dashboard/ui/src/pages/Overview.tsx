import { useQuery } from '@tanstack/react-query';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { get } from '../api';
import { Clip, ErrorBox, Loading, Page, Stat } from '../components/ui';
import { int, plural, usd } from '../format';
import { utcDay } from '../time';

type Overview = DashboardData<'overview'>;

function TopList(props: { title: string; rows: Overview['top_models']; empty: string; unnamed: string }) {
  return (
    <div className="card">
      <h2>{props.title}</h2>
      {props.rows.length === 0 ? (
        <p className="muted">{props.empty}</p>
      ) : (
        <ol className="top-list">
          {props.rows.map((r) => (
            <li key={r.name ?? '(none)'}>
              <Clip className="top-name" text={r.name ?? props.unnamed} />
              <span className="top-figures">
                {usd(r.cost)} · {int(r.requests)} req
              </span>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

/**
 * Spend per UTC day as bars: a day without spend has no bar (a smoothed curve drew spend the day
 * before it happened).
 */
function SpendChart(props: { daily: Overview['daily'] }) {
  return (
    <div className="chart" data-testid="spend-chart">
      <ResponsiveContainer width="100%" height={240}>
        <BarChart
          data={props.daily.map((d) => ({ ...d, cost: Number(d.cost) }))}
          margin={{ left: 8, right: 8 }}
          maxBarSize={28}
        >
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="date" tickFormatter={(d: string) => d.slice(5)} minTickGap={16} />
          <YAxis tickFormatter={(v: number) => usd(v)} width={88} />
          <Tooltip formatter={(v) => [usd(Number(v)), 'Spend']} labelFormatter={(d) => utcDay(String(d))} />
          <Bar dataKey="cost" name="Spend" fill="#1d4ed8" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

export function OverviewPage() {
  const q = useQuery({
    queryKey: ['overview'],
    queryFn: async () => (await get<DashboardAnswer<'overview'>>('/api/overview')).data,
    // Coming back to the overview always shows fresh figures (a cached answer may predate new spend).
    refetchOnMount: 'always',
    refetchInterval: 10_000,
  });
  const o = q.data;
  return (
    <Page title="Overview">
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      {q.isPending ? <Loading label="Loading the account's figures…" /> : null}
      {o ? (
        <>
          <div className="stats">
            <Stat
              label="Spend today (UTC)"
              value={usd(o.today.cost)}
              hint={plural(o.today.requests, 'request')}
              testId="spend-today"
            />
            <Stat
              label="This week (UTC, from Monday)"
              value={usd(o.week.cost)}
              hint={plural(o.week.requests, 'request')}
            />
            <Stat
              label="This month (UTC)"
              value={usd(o.month.cost)}
              hint={plural(o.month.requests, 'request')}
            />
            <Stat
              label="Credits left"
              value={usd(o.credits.remaining)}
              hint={`${usd(o.credits.total_usage)} used of ${usd(o.credits.total_credits)}`}
              testId="credits-left"
            />
          </div>
          <div className="card">
            <h2>Spend per day, last 30 days (UTC days)</h2>
            <SpendChart daily={o.daily} />
          </div>
          <div className="two-col">
            <TopList title="Top models (30 days)" rows={o.top_models} empty="No requests yet." unnamed="—" />
            <TopList
              title="Top apps (30 days)"
              rows={o.top_apps}
              empty="No requests yet."
              unnamed="(no X-Title)"
            />
          </div>
        </>
      ) : null}
    </Page>
  );
}
