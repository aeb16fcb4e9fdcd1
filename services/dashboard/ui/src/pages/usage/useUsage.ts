import { useQuery } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useCallback, useMemo } from 'react';
import { get } from '../../api';
import { useKeyNames } from '../../hooks/useKeyNames';
import { CHART_SERIES, chartPoints, type GroupBy, type Metric, totalsOf } from './usage-data';

/** The label of a group: a key's or team's name, `(no X-Title)` for an app without one. */
function useGroupLabel(groupBy: GroupBy) {
  const { names: keyNames } = useKeyNames(groupBy === 'key');
  const teams = useQuery({
    queryKey: ['teams'],
    queryFn: async () => (await get<DashboardAnswer<'teams'>>('/api/teams')).data,
    enabled: groupBy === 'team',
  });
  const names = useMemo(() => {
    const byId = new Map(keyNames);
    for (const t of teams.data ?? []) byId.set(t.id, t.name);
    return byId;
  }, [keyNames, teams.data]);
  return useCallback(
    (g: string | null) => {
      if (groupBy === 'none') return 'All';
      if (g === null) return groupBy === 'app' ? '(no X-Title)' : groupBy === 'team' ? '(no team)' : '—';
      return groupBy === 'key' || groupBy === 'team' ? (names.get(g) ?? g.slice(0, 8)) : g;
    },
    [groupBy, names],
  );
}

/**
 * The Usage page's data: the usage of the window (`query`, refreshed every 10 s), its totals per
 * group, and the chart's series (the top groups) and points.
 */
export function useUsage(
  query: string,
  groupBy: GroupBy,
  metric: Metric,
  window: { from: string; to: number; unit: number },
) {
  const usage = useQuery({
    queryKey: ['usage', query],
    queryFn: async () => (await get<DashboardAnswer<'usage'>>(`/api/usage?${query}`)).data,
    refetchInterval: 10_000,
  });
  const labelOf = useGroupLabel(groupBy);
  const rows = usage.data?.rows ?? [];
  const totals = useMemo(() => totalsOf(rows, labelOf), [rows, labelOf]);
  const series = totals.slice(0, CHART_SERIES).map((t) => t.group);
  const { from, to, unit } = window;
  const points = useMemo(
    () => chartPoints(rows, series, metric, { from, to, unit }),
    [rows, metric, series, from, to, unit],
  );
  return {
    usage,
    labelOf,
    totals,
    series,
    points,
    hasOther: totals.length > CHART_SERIES,
    truncated: (usage.data?.next_offset ?? null) !== null,
  };
}
