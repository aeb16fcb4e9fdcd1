import { useInfiniteQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { get } from '../api';
import { DataTable } from '../components/DataTable';
import { ErrorBox, Page, Stat } from '../components/ui';
import { usd, usdColumn, when } from '../format';

type Credits = DashboardData<'credits'>;
type Entry = Credits['ledger'][number];
const col = createColumnHelper<Entry>();

export function CreditsPage() {
  const q = useInfiniteQuery({
    queryKey: ['credits'],
    initialPageParam: null as string | null,
    queryFn: async ({ pageParam }) =>
      (
        await get<DashboardAnswer<'credits'>>(
          `/api/credits?limit=50${pageParam ? `&before=${pageParam}` : ''}`,
        )
      ).data,
    getNextPageParam: (last) => last.next_before,
  });
  const first = q.data?.pages[0];
  const entries = q.data?.pages.flatMap((p) => p.ledger) ?? [];
  const amount = usdColumn(entries.map((e) => e.amount));
  return (
    <Page title="Credits">
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      {first ? (
        <div className="stats">
          <Stat label="Balance" value={usd(first.remaining)} testId="balance" />
          <Stat label="Credits granted" value={usd(first.total_credits)} />
          <Stat label="Spent" value={usd(first.total_usage)} />
        </div>
      ) : null}
      <DataTable
        label="Credit ledger"
        data={entries}
        loading={q.isPending}
        columns={[
          col.accessor('created_at', { header: 'Time', cell: (c) => when(c.getValue()) }),
          col.accessor((e) => Number(e.amount), {
            id: 'amount',
            header: 'Amount',
            cell: (c) => amount(c.row.original.amount),
            meta: { numeric: true },
          }),
          col.accessor('note', { header: 'Note', cell: (c) => c.getValue() ?? '—', meta: { wrap: true } }),
        ]}
        empty="No credits yet: an operator adds them with `pnpm tollgate credits add`."
      />
      {q.hasNextPage ? (
        <button type="button" className="secondary" onClick={() => q.fetchNextPage()}>
          Load more
        </button>
      ) : null}
    </Page>
  );
}
