import { useInfiniteQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useState } from 'react';
import { get } from '../api';
import { DataTable } from '../components/DataTable';
import { ErrorBox, Page } from '../components/ui';
import { when } from '../format';
import { useDebounced } from '../hooks/useDebounced';

/** One entry of the merged audit timeline (keys, billing and dashboard logs). */
type Entry = AuditAnswer['data'][number];
type AuditAnswer = DashboardAnswer<'audit'>;
const col = createColumnHelper<Entry>();
const show = (v: unknown) => (v === undefined ? '—' : JSON.stringify(v));

/**
 * What an entry changed, one line a field: `field: before → after` for the fields that differ (an
 * update), `field: value` for what a creation set (empty values left out), and nothing more for a
 * deletion. The whole records stay in the CSV export.
 */
function changeLines(before: Record<string, unknown> | null, after: Record<string, unknown> | null) {
  if (before === null && after === null) return [];
  if (before === null)
    return Object.entries(after ?? {})
      .filter(([, v]) => v !== null && v !== false && !(Array.isArray(v) && v.length === 0))
      .map(([k, v]) => `${k}: ${show(v)}`);
  if (after === null) return ['deleted'];
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return fields
    .filter((k) => show(before[k]) !== show(after[k]))
    .map((k) => `${k}: ${show(before[k])} → ${show(after[k])}`);
}

function Change(props: { entry: Entry }) {
  const lines = changeLines(props.entry.before, props.entry.after);
  if (lines.length === 0) return <>—</>;
  return (
    <ul className="change">
      {lines.map((l) => (
        <li key={l}>{l}</li>
      ))}
    </ul>
  );
}

/** The account's audit log: every change, who, when, from where, before and after; filters and CSV. */
export function AuditPage() {
  const [source, setSource] = useState('all');
  const [actorKind, setActorKind] = useState('');
  const [action, setAction] = useState('');
  const [target, setTarget] = useState('');
  const filters = new URLSearchParams({ source });
  if (actorKind) filters.set('actor_kind', actorKind);
  const a = useDebounced(action.trim(), 300);
  const t = useDebounced(target.trim(), 300);
  if (a) filters.set('action', a);
  if (t) filters.set('target_id', t);
  const query = filters.toString();
  const q = useInfiniteQuery({
    queryKey: ['audit', query],
    initialPageParam: null as string | null,
    queryFn: async ({ pageParam }) =>
      get<AuditAnswer>(
        `/api/audit?${query}&limit=100${pageParam ? `&before=${encodeURIComponent(pageParam)}` : ''}`,
      ),
    getNextPageParam: (last) => last.next_before,
  });
  const entries = q.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Page
      title="Audit log"
      actions={
        <a className="button secondary" href={`/api/audit?${query}&format=csv`} download>
          Export CSV
        </a>
      }
    >
      <form className="controls" aria-label="Audit filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Source
          <select value={source} onChange={(e) => setSource(e.target.value)}>
            <option value="all">All</option>
            <option value="keys">Keys and teams</option>
            <option value="billing">Credits and billing</option>
            <option value="dashboard">Users and sign-in</option>
          </select>
        </label>
        <label>
          Actor
          <select value={actorKind} onChange={(e) => setActorKind(e.target.value)}>
            <option value="">Anyone</option>
            <option value="user">Dashboard user</option>
            <option value="management_key">Management key</option>
            <option value="admin_cli">Admin CLI</option>
          </select>
        </label>
        <label>
          Action
          <input value={action} placeholder="key.update" onChange={(e) => setAction(e.target.value)} />
        </label>
        <label>
          Target id
          <input value={target} onChange={(e) => setTarget(e.target.value)} />
        </label>
      </form>
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      <div className="audit-table">
        <DataTable
          label="Audit log"
          data={entries}
          loading={q.isPending}
          columns={[
            col.accessor('at', { header: 'Time', cell: (c) => when(c.getValue()) }),
            col.accessor('action', { header: 'Action' }),
            // Who, and from where, in one cell: the table fits a 1280 px screen.
            col.accessor((e) => `${e.actor.kind}${e.actor.id ? ` ${e.actor.id}` : ''}`, {
              id: 'actor',
              header: 'Who',
              meta: { wrap: true },
              // One element: on a narrow screen the cell is a "label value" grid line.
              cell: (c) => (
                <div>
                  {c.getValue()}
                  {c.row.original.client_address ? (
                    <div className="muted">from {c.row.original.client_address}</div>
                  ) : null}
                </div>
              ),
            }),
            col.accessor((e) => `${e.target.kind} ${e.target.id}`, {
              id: 'target',
              header: 'Target',
              meta: { wrap: true },
            }),
            col.display({
              id: 'change',
              header: 'Change',
              meta: { wrap: true },
              cell: (c) => <Change entry={c.row.original} />,
            }),
            col.accessor('source', { header: 'Log' }),
          ]}
          empty="No change matches these filters."
        />
      </div>
      {q.hasNextPage ? (
        <button type="button" className="secondary" onClick={() => q.fetchNextPage()}>
          Load more
        </button>
      ) : null}
    </Page>
  );
}
