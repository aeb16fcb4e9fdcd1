import {
  type ColumnDef,
  flexRender,
  getCoreRowModel,
  getSortedRowModel,
  type SortingState,
  useReactTable,
} from '@tanstack/react-table';
import { type KeyboardEvent, useState } from 'react';
import { Loading } from './ui';

declare module '@tanstack/react-table' {
  interface ColumnMeta<TData, TValue> {
    /** Right-aligned, tabular figures. */
    numeric?: boolean;
    /** Cell may wrap (long free text); others never wrap. */
    wrap?: boolean;
  }
}

/**
 * A sortable table (TanStack Table). Sortable headers are buttons (keyboard and screen readers, with
 * `aria-sort`); clickable rows are focusable and open with Enter or Space. With `sorting` and
 * `onSortingChange` the sort is the server's (every record, not the loaded rows). While `loading`
 * the body says so, never "nothing yet". On narrow screens (styles.css, ≤ 760 px) each row becomes a
 * card of "label value" lines, labelled from the column headers.
 */
export function DataTable<T>(props: {
  data: T[];
  // biome-ignore lint/suspicious/noExplicitAny: column value types differ per column
  columns: ColumnDef<T, any>[];
  empty?: string;
  label: string;
  loading?: boolean;
  onRowClick?: (row: T) => void;
  rowLabel?: (row: T) => string;
  rowTestId?: (row: T) => string;
  /** Server-side sorting (controlled). */
  sorting?: SortingState;
  onSortingChange?: (s: SortingState) => void;
}) {
  const [localSorting, setLocalSorting] = useState<SortingState>([]);
  const manual = props.onSortingChange !== undefined;
  const sorting = manual ? (props.sorting ?? []) : localSorting;
  const table = useReactTable({
    data: props.data,
    columns: props.columns,
    state: { sorting },
    manualSorting: manual,
    sortDescFirst: true,
    onSortingChange: (u) => {
      const next = typeof u === 'function' ? u(sorting) : u;
      if (manual) props.onSortingChange?.(next);
      else setLocalSorting(next);
    },
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
  });
  const open = (row: T) => (e: KeyboardEvent) => {
    if (e.target !== e.currentTarget) return;
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      props.onRowClick?.(row);
    }
  };
  const rows = table.getRowModel().rows;
  return (
    <div className="table-frame">
      <table aria-label={props.label} aria-busy={props.loading || undefined}>
        <thead>
          {table.getHeaderGroups().map((hg) => (
            <tr key={hg.id}>
              {hg.headers.map((h) => {
                const sorted = h.column.getIsSorted();
                const meta = h.column.columnDef.meta;
                return (
                  <th
                    key={h.id}
                    className={meta?.numeric ? 'num' : undefined}
                    aria-sort={sorted === 'asc' ? 'ascending' : sorted === 'desc' ? 'descending' : undefined}
                    scope="col"
                  >
                    {h.column.getCanSort() ? (
                      <button type="button" className="sort" onClick={h.column.getToggleSortingHandler()}>
                        {flexRender(h.column.columnDef.header, h.getContext())}
                        <span aria-hidden="true">{{ asc: ' ▲', desc: ' ▼' }[sorted as string] ?? ''}</span>
                      </button>
                    ) : (
                      flexRender(h.column.columnDef.header, h.getContext())
                    )}
                  </th>
                );
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={props.columns.length} className="empty">
                {props.loading ? <Loading /> : (props.empty ?? 'Nothing yet.')}
              </td>
            </tr>
          ) : (
            rows.map((row) => (
              <tr
                key={row.id}
                data-testid={props.rowTestId?.(row.original)}
                className={props.onRowClick ? 'clickable' : undefined}
                tabIndex={props.onRowClick ? 0 : undefined}
                aria-label={props.onRowClick ? props.rowLabel?.(row.original) : undefined}
                onClick={props.onRowClick ? () => props.onRowClick?.(row.original) : undefined}
                onKeyDown={props.onRowClick ? open(row.original) : undefined}
              >
                {row.getVisibleCells().map((cell) => {
                  const header = cell.column.columnDef.header;
                  const meta = cell.column.columnDef.meta;
                  const cls = [meta?.numeric ? 'num' : '', meta?.wrap ? 'wrap' : ''].join(' ').trim();
                  return (
                    <td
                      key={cell.id}
                      className={cls || undefined}
                      data-label={typeof header === 'string' ? header : undefined}
                    >
                      {flexRender(cell.column.columnDef.cell, cell.getContext())}
                    </td>
                  );
                })}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}
