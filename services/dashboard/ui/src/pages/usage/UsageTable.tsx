import { createColumnHelper } from '@tanstack/react-table';
import { DataTable } from '../../components/DataTable';
import { Clip } from '../../components/ui';
import { int, usdColumn } from '../../format';
import type { GroupBy, Totals } from './usage-data';

const col = createColumnHelper<Totals>();

/** The totals per group of the range: requests, tokens and spend. */
export function UsageTable(props: { totals: Totals[]; groupBy: GroupBy; loading: boolean }) {
  const { totals, groupBy } = props;
  const cost = usdColumn(totals.map((t) => t.cost.toFixed(8)));
  const count = (header: string) => ({
    header,
    cell: (c: { getValue(): number }) => int(c.getValue()),
    meta: { numeric: true },
  });
  const columns = [
    col.accessor('label', {
      header: groupBy === 'none' ? 'Total' : groupBy[0]!.toUpperCase() + groupBy.slice(1),
      cell: (c) => <Clip text={c.getValue()} />,
    }),
    col.accessor('requests', count('Requests')),
    col.accessor('tokens_prompt', count('Prompt tokens')),
    col.accessor('tokens_completion', count('Completion tokens')),
    col.accessor('tokens_cached', count('Cached')),
    col.accessor('cost', { header: 'Cost', cell: (c) => cost(c.getValue()), meta: { numeric: true } }),
  ];
  return (
    <DataTable
      label="Usage by group"
      data={totals}
      columns={columns}
      loading={props.loading}
      empty="No usage in this range."
      rowTestId={(t) => `usage-${t.label}`}
    />
  );
}
