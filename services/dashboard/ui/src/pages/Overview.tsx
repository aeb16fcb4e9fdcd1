import { useQuery } from '@tanstack/react-query';
import { Area, AreaChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { get } from '../api';
import { ErrorBox, Page, Stat } from '../components/ui';
import { int, plural, usd } from '../format';

interface Overview {
  today: { cost: string; requests: number };
  week: { cost: string; requests: number };
  month: { cost: string; requests: number };
  credits: { total_credits: string; total_usage: string; remaining: string };
  top_models: Array<{ name: string | null; cost: string; requests: number }>;
  top_apps: Array<{ name: string | null; cost: string; requests: number }>;
  daily: Array<{ date: string; cost: string; requests: number }>;
}

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
              <span className="top-name">{r.name ?? props.unnamed}</span>
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

export function OverviewPage() {
  const q = useQuery({
    queryKey: ['overview'],
    queryFn: async () => (await get<{ data: Overview }>('/api/overview')).data,
    // Coming back to the overview always shows fresh figures (a cached answer may predate new spend).
    refetchOnMount: 'always',
    refetchInterval: 10_000,
  });
  const o = q.data;
  return (
    <Page title="Overview">
      <ErrorBox error={q.error} />
      {o ? (
        <>
          <div className="stats">
            <Stat
              label="Spend today"
              value={usd(o.today.cost)}
              hint={plural(o.today.requests, 'request')}
              testId="spend-today"
            />
            <Stat label="This week" value={usd(o.week.cost)} hint={plural(o.week.requests, 'request')} />
            <Stat label="This month" value={usd(o.month.cost)} hint={plural(o.month.requests, 'request')} />
            <Stat
              label="Credits left"
              value={usd(o.credits.remaining)}
              hint={`${usd(o.credits.total_usage)} used of ${usd(o.credits.total_credits)}`}
              testId="credits-left"
            />
          </div>
          <div className="card">
            <h2>Spend, last 30 days</h2>
            <div className="chart" data-testid="spend-chart">
              <ResponsiveContainer width="100%" height={240}>
                <AreaChart
                  data={o.daily.map((d) => ({ ...d, cost: Number(d.cost) }))}
                  margin={{ left: 8, right: 8 }}
                >
                  <CartesianGrid strokeDasharray="3 3" vertical={false} />
                  <XAxis dataKey="date" tickFormatter={(d: string) => d.slice(5)} minTickGap={16} />
                  <YAxis tickFormatter={(v: number) => usd(v)} width={88} />
                  <Tooltip formatter={(v) => usd(Number(v))} />
                  <Area
                    type="monotone"
                    dataKey="cost"
                    name="Spend"
                    stroke="#2563eb"
                    fill="#bfdbfe"
                    isAnimationActive={false}
                  />
                </AreaChart>
              </ResponsiveContainer>
            </div>
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
