import { useState } from 'react';
import { ErrorBox, Page } from '../components/ui';
import { int } from '../format';
import { UsageControls, type UsageView } from './usage/Controls';
import { ErrorsSection } from './usage/Errors';
import { LatencyTable } from './usage/Latency';
import { UsageChart } from './usage/UsageChart';
import { UsageTable } from './usage/UsageTable';
import { DAY, GROUP_BYS, type GroupBy, utcDayOf, viewWindow } from './usage/usage-data';
import { useUsage } from './usage/useUsage';

/** `?group_by=` of the page's address, when it names a grouping (default: by model). */
const groupByOf = (params: URLSearchParams): GroupBy => {
  const g = params.get('group_by');
  return g !== null && (GROUP_BYS as readonly string[]).includes(g) ? (g as GroupBy) : 'model';
};

/**
 * Usage: spend, requests or tokens per bucket and group (usage/UsageChart.tsx), the totals per group
 * (usage/UsageTable.tsx), latency percentiles (usage/Latency.tsx) and errors (usage/Errors.tsx) of
 * the range the controls pick (usage/Controls.tsx); the data comes from usage/useUsage.ts. A team
 * viewer (`member`) sees their teams' totals: grouped by team (the server answers only their teams'
 * rows), without the account-wide latency and errors.
 */
export function UsagePage(props: { params: URLSearchParams; member?: boolean }) {
  const [view, setView] = useState<UsageView>(() => ({
    range: '30d',
    granularity: 'day',
    fromDay: utcDayOf(Date.now() - 6 * DAY),
    toDay: utcDayOf(Date.now()),
    groupBy: props.member ? 'team' : groupByOf(props.params),
    metric: 'cost',
  }));
  const { unit, from, to, granularity, error } = viewWindow(view);
  const query = `from=${from.toISOString()}&to=${to.toISOString()}&granularity=${granularity}&group_by=${view.groupBy}`;
  const data = useUsage(query, view.groupBy, view.metric, {
    from: from.toISOString(),
    to: to.getTime(),
    unit,
  });

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
      <UsageControls
        view={view}
        daysOnly={to.getTime() - from.getTime() > 31 * DAY}
        error={error}
        onChange={setView}
        fixedGroup={props.member}
      />
      <p className="muted small" data-testid="usage-range">
        {from.toISOString().slice(0, 16).replace('T', ' ')} –{' '}
        {to.toISOString().slice(0, 16).replace('T', ' ')} UTC. Buckets are UTC{' '}
        {granularity === 'hour' ? 'hours' : 'days'}
        {view.range === 'custom' ? '.' : '; a range ends with the current one.'}
      </p>
      <ErrorBox error={data.usage.error} onRetry={() => data.usage.refetch()} />
      <UsageChart
        points={data.points}
        series={data.series}
        hasOther={data.hasOther}
        metric={view.metric}
        granularity={granularity}
        labelOf={data.labelOf}
      />
      {data.truncated ? (
        <p className="muted small" data-testid="top-groups">
          The {int(data.totals.length)} groups with the most spend in this range; the CSV export has them all.
        </p>
      ) : null}
      <UsageTable totals={data.totals} groupBy={view.groupBy} loading={data.usage.isPending} />
      {!props.member && (
        <>
          <LatencyTable
            from={new Date(Math.max(from.getTime(), to.getTime() - 31 * DAY)).toISOString()}
            to={to.toISOString()}
            groupBy={view.groupBy === 'provider' ? 'provider' : 'model'}
          />
          <ErrorsSection from={from.toISOString()} to={to.toISOString()} />
        </>
      )}
    </Page>
  );
}
