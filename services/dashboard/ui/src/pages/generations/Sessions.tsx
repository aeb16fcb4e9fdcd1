import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { get } from '../../api';
import { DataTable } from '../../components/DataTable';
import { Clip, ErrorBox } from '../../components/ui';
import { int, usdColumn } from '../../format';
import { whenShort } from '../../time';

type Session = DashboardAnswer<'sessions'>['data'][number];
const col = createColumnHelper<Session>();

/**
 * The request log's client sessions (Claude Code's `X-Claude-Code-Session-Id`, Codex's session id)
 * with their total cost; choosing one shows its requests. Hidden while there are none.
 */
export function SessionsPanel(props: { range: string; selected: string; onSelect: (id: string) => void }) {
  const q = useQuery({
    queryKey: ['sessions', props.range],
    queryFn: async () =>
      (
        await get<DashboardAnswer<'sessions'>>(
          `/api/sessions?limit=10${props.range ? `&${props.range}` : ''}`,
        )
      ).data,
    refetchInterval: 10_000,
  });
  const sessions = q.data ?? [];
  if (!q.error && sessions.length === 0 && !props.selected) return null;
  const cost = usdColumn(sessions.map((s) => s.cost));
  return (
    <section className="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions (latest 10)</h2>
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      <DataTable
        label="Sessions"
        data={sessions}
        loading={q.isPending}
        onRowClick={(s) => props.onSelect(s.session_id === props.selected ? '' : s.session_id)}
        rowLabel={(s) => `Show the requests of session ${s.session_id}`}
        rowTestId={(s) => `session-${s.session_id}`}
        columns={[
          col.accessor('session_id', {
            header: 'Session',
            cell: (c) => <Clip text={`${c.getValue() === props.selected ? '▶ ' : ''}${c.getValue()}`} />,
          }),
          col.accessor('requests', {
            header: 'Requests',
            cell: (c) => int(c.getValue()),
            meta: { numeric: true },
          }),
          col.accessor((s) => Number(s.cost), {
            id: 'cost',
            header: 'Total cost',
            cell: (c) => cost(c.row.original.cost),
            meta: { numeric: true },
          }),
          col.accessor('models', {
            header: 'Models',
            cell: (c) => <Clip text={c.getValue().join(', ')} />,
            enableSorting: false,
          }),
          col.accessor('first_at', { header: 'From', cell: (c) => whenShort(c.getValue()) }),
          col.accessor('last_at', { header: 'To', cell: (c) => whenShort(c.getValue()) }),
        ]}
      />
    </section>
  );
}
