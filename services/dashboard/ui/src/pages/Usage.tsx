import { useEffect, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import { ErrorBox, Page } from '../components/ui';
import { int } from '../format';
import { UsageControls, type UsageView } from './usage/Controls';
import { ErrorsSection } from './usage/Errors';
import { LatencyTable } from './usage/Latency';
import { UsageChart } from './usage/UsageChart';
import { UsageTable } from './usage/UsageTable';
import {
  DAY,
  GROUP_BYS,
  type GroupBy,
  type Metric,
  RANGES,
  type Range,
  utcDayOf,
  viewWindow,
} from './usage/usage-data';
import { useUsage } from './usage/useUsage';

/** `?group_by=` of the page's address, when it names a grouping (default: by model). */
const groupByOf = (params: URLSearchParams): GroupBy => {
  const g = params.get('group_by');
  return g !== null && (GROUP_BYS as readonly string[]).includes(g) ? (g as GroupBy) : 'model';
};

/**
 * The page's view lives in its address (`#/usage?range=custom&from=2026-11-01&to=2026-11-26&
 * group_by=key`), so a link or a reload shows the same range: `range` a preset (`24h`, `7d`, `30d`,
 * `90d`; default 30d) or `custom` with `from` and `to` (UTC days, inclusive; default the last 7),
 * `granularity=hour`, `group_by`, `metric`. Defaults are left out of the address.
 */
function viewOf(params: URLSearchParams, member: boolean): UsageView {
  const r = params.get('range') ?? '';
  const range: Range = r === 'custom' || r in RANGES ? (r as Range) : '30d';
  const m = params.get('metric');
  return {
    range,
    granularity: params.get('granularity') === 'hour' ? 'hour' : 'day',
    fromDay: params.get('from') ?? utcDayOf(Date.now() - 6 * DAY),
    toDay: params.get('to') ?? utcDayOf(Date.now()),
    groupBy: member ? 'team' : groupByOf(params),
    metric: m === 'requests' || m === 'tokens' ? (m as Metric) : 'cost',
  };
}

function paramsOf(view: UsageView, member: boolean): URLSearchParams {
  const p = new URLSearchParams();
  if (view.range !== '30d') p.set('range', view.range);
  if (view.range === 'custom') {
    p.set('from', view.fromDay);
    p.set('to', view.toDay);
  }
  if (view.granularity !== 'day') p.set('granularity', view.granularity);
  if (!member && view.groupBy !== 'model') p.set('group_by', view.groupBy);
  if (view.metric !== 'cost') p.set('metric', view.metric);
  return p;
}

/**
 * Usage: spend, requests or tokens per bucket and group (usage/UsageChart.tsx), the totals per group
 * (usage/UsageTable.tsx), latency percentiles (usage/Latency.tsx) and errors (usage/Errors.tsx) of
 * the range the controls pick (usage/Controls.tsx); the data comes from usage/useUsage.ts. A team
 * viewer (`member`) sees their teams' totals: grouped by team (the server answers only their teams'
 * rows), without the account-wide latency and errors.
 */
export function UsagePage(props: { member?: boolean }) {
  const member = props.member ?? false;
  const [params, setParams] = useSearchParams();
  // The page's state, written through to the address (the address updates in a transition: a second
  // pick right after the first must not read a view the address has not caught up with).
  const [view, setViewState] = useState(() => viewOf(params, member));
  const written = useRef(paramsOf(view, member).toString());
  useEffect(() => {
    // The address changed by a link or the history, not by this page: show what it says.
    if (params.toString() === written.current) return;
    written.current = params.toString();
    setViewState(viewOf(params, member));
  }, [params, member]);
  const setView = (v: UsageView) => {
    setViewState(v);
    written.current = paramsOf(v, member).toString();
    // Replace, not push: picking days one after the other is one place in the history.
    setParams(written.current, { replace: true });
  };
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
