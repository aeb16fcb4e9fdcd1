import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { get } from '../api';
import { DataTable } from '../components/DataTable';
import { ErrorBox, Page } from '../components/ui';
import { int, usdColumn } from '../format';

type Model = DashboardData<'models'>[number];
const col = createColumnHelper<Model>();

export function ModelsPage() {
  const q = useQuery({
    queryKey: ['models'],
    queryFn: async () => (await get<DashboardAnswer<'models'>>('/api/models')).data,
  });
  const models = q.data ?? [];
  const price = usdColumn(
    models.flatMap((m) => [
      m.price_per_million.prompt,
      m.price_per_million.completion,
      m.price_per_million.cache_read,
    ]),
  );
  return (
    <Page title="Models">
      <p className="muted">Prices in USD per million tokens.</p>
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      <DataTable
        label="Models"
        data={models}
        loading={q.isPending}
        rowTestId={(m) => `model-${m.id}`}
        columns={[
          col.accessor('id', {
            header: 'Model',
            cell: (c) => (
              <div>
                <div>{c.getValue()}</div>
                <div className="muted small">{c.row.original.name}</div>
              </div>
            ),
          }),
          col.accessor((m) => Number(m.price_per_million.prompt), {
            id: 'prompt',
            header: 'Input / 1M',
            cell: (c) => price(c.row.original.price_per_million.prompt),
            meta: { numeric: true },
          }),
          col.accessor((m) => Number(m.price_per_million.completion), {
            id: 'completion',
            header: 'Output / 1M',
            cell: (c) => price(c.row.original.price_per_million.completion),
            meta: { numeric: true },
          }),
          col.accessor((m) => Number(m.price_per_million.cache_read), {
            id: 'cache_read',
            header: 'Cache read / 1M',
            cell: (c) => price(c.row.original.price_per_million.cache_read),
            meta: { numeric: true },
          }),
          col.accessor('context_length', {
            header: 'Context',
            cell: (c) => int(c.getValue()),
            meta: { numeric: true },
          }),
          col.accessor((m) => m.providers.join(', '), {
            id: 'providers',
            header: 'Providers',
            meta: { wrap: true },
          }),
        ]}
      />
    </Page>
  );
}
