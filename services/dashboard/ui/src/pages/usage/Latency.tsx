import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { get } from '../../api';
import { DataTable } from '../../components/DataTable';
import { Clip, ErrorBox } from '../../components/ui';
import { int, overheadMs } from '../../format';

type LatencyRow = DashboardAnswer<'latency'>['data']['rows'][number];
type Figures = LatencyRow['ttft_ms'];
const col = createColumnHelper<LatencyRow>();
const msOf = (n: number | null) =>
  n === null ? '—' : n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${int(n)} ms`;
const pair = (f: Figures) => `${msOf(f.p50)} / ${msOf(f.p90)}`;

/**
 * Latency and errors over the same range as the usage above: time to first token, total latency and
 * the gateway's own overhead (median / 90th percentile, read from billing's roll-up histograms,
 * within ~20 %), output tokens per second of generation, and the share of requests that ended with
 * an upstream error.
 */
export function LatencyTable(props: { from: string; to: string; groupBy: 'model' | 'provider' }) {
  const query = `from=${props.from}&to=${props.to}&group_by=${props.groupBy}`;
  const q = useQuery({
    queryKey: ['latency', query],
    queryFn: async () => (await get<DashboardAnswer<'latency'>>(`/api/latency?${query}`)).data.rows,
    refetchInterval: 10_000,
  });
  const columns = [
    col.accessor((r) => r.group ?? '—', {
      id: 'group',
      header: props.groupBy === 'model' ? 'Model' : 'Provider',
      cell: (c) => <Clip text={c.getValue()} />,
    }),
    col.accessor('requests', { header: 'Requests', cell: (c) => int(c.getValue()), meta: { numeric: true } }),
    col.accessor('error_rate', {
      header: 'Errors',
      cell: (c) => `${(c.getValue() * 100).toFixed(1)} % (${int(c.row.original.errors)})`,
      meta: { numeric: true },
    }),
    col.accessor((r) => r.ttft_ms.p50 ?? 0, {
      id: 'ttft',
      header: 'First token p50 / p90',
      cell: (c) => pair(c.row.original.ttft_ms),
      meta: { numeric: true },
    }),
    col.accessor((r) => r.total_ms.p50 ?? 0, {
      id: 'total',
      header: 'Total p50 / p90',
      cell: (c) => pair(c.row.original.total_ms),
      meta: { numeric: true },
    }),
    col.accessor((r) => r.gateway_overhead_ms.p50 ?? 0, {
      id: 'overhead',
      header: 'Gateway overhead p50 / p90',
      cell: (c) => {
        const f = c.row.original.gateway_overhead_ms;
        return `${overheadMs(f.p50)} / ${overheadMs(f.p90)}`;
      },
      meta: { numeric: true },
    }),
    col.accessor((r) => r.tokens_per_second ?? 0, {
      id: 'tps',
      header: 'Tokens/s',
      cell: (c) =>
        c.row.original.tokens_per_second === null ? '—' : c.row.original.tokens_per_second.toFixed(1),
      meta: { numeric: true },
    }),
  ];
  return (
    <section className="card" aria-labelledby="latency-title">
      <h2 id="latency-title">Latency and errors (the range above, at most its last 31 days)</h2>
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      <DataTable
        label="Latency and errors"
        data={q.data ?? []}
        columns={columns}
        loading={q.isPending}
        empty="No requests in this range."
        rowTestId={(r) => `latency-${r.group ?? 'all'}`}
      />
    </section>
  );
}
