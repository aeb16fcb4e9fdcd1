import { useInfiniteQuery } from '@tanstack/react-query';
import { createColumnHelper, type SortingState } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useEffect, useMemo, useState } from 'react';
import { useLocation, useNavigate, useSearchParams } from 'react-router';
import { type Generation, get, type Key } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, Clip, ErrorBox, KeyNamesError, Page } from '../components/ui';
import { int, ms, usdColumn } from '../format';
import { useDebounced } from '../hooks/useDebounced';
import { useKeyNames } from '../hooks/useKeyNames';
import { displayZone, fromLocalInput, toLocalInput, whenShort } from '../time';
import { GenerationDetail } from './generations/Detail';
import { SessionsPanel } from './generations/Sessions';

const col = createColumnHelper<Generation>();
/** Columns the server sorts by (every record of the filter, not the loaded rows). */
const SORTS: Record<string, string> = {
  created_at: 'created_at',
  cost: 'cost',
  tokens: 'tokens',
  latency: 'latency',
};

type LogPage = DashboardAnswer<'generations'>;
type Cursor = { before?: string; offset?: number } | null;

/**
 * The filters as query parameters; text filters are prefixes, applied once typing pauses. The key and
 * the date range also live in the page's address (`#/generations?key_id=…&from=…&to=…`, instants in
 * ISO), so a link or a reload shows the same records, whatever the reader's time zone.
 */
function useFilters() {
  const [address, setAddress] = useSearchParams();
  const [id, setId] = useState('');
  const [model, setModel] = useState('');
  const [app, setApp] = useState('');
  const [keyId, setKeyId] = useState(() => address.get('key_id') ?? '');
  const [source, setSource] = useState('');
  const [from, setFrom] = useState(() => toLocalInput(address.get('from')));
  const [to, setTo] = useState(() => toLocalInput(address.get('to')));
  const [session, setSession] = useState('');
  const text = useDebounced({ id, model, app, from, to });
  const params = new URLSearchParams();
  if (text.id.trim().length >= 3) params.set('id_prefix', text.id.trim());
  if (text.model.trim()) params.set('model_prefix', text.model.trim());
  if (text.app.trim()) params.set('app_prefix', text.app.trim());
  if (keyId) params.set('key_id', keyId);
  if (source) params.set('usage_source', source);
  const fromIso = fromLocalInput(text.from);
  const toIso = fromLocalInput(text.to);
  if (fromIso) params.set('from', fromIso);
  if (toIso) params.set('to', toIso);
  const range = new URLSearchParams();
  if (fromIso) range.set('from', fromIso);
  if (toIso) range.set('to', toIso);
  if (session) params.set('session_id', session);
  useEffect(() => {
    const next = new URLSearchParams(address);
    for (const [name, value] of [
      ['key_id', keyId],
      ['from', fromIso],
      ['to', toIso],
    ] as const) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    if (next.toString() !== address.toString()) setAddress(next, { replace: true });
  }, [address, setAddress, keyId, fromIso, toIso]);
  const fields = {
    session,
    setSession,
    range: range.toString(),
    id,
    setId,
    model,
    setModel,
    app,
    setApp,
    keyId,
    setKeyId,
    source,
    setSource,
    from,
    setFrom,
    to,
    setTo,
  };
  return { params: params.toString(), fields };
}

function Filters(props: { f: ReturnType<typeof useFilters>['fields']; keys: Key[] }) {
  const { f } = props;
  // The pickers read and show times in the display zone, named (e.g. America/New_York).
  const zone = displayZone();
  return (
    <fieldset className="card controls" aria-label="Filters">
      <label>
        Id
        <input value={f.id} onChange={(e) => f.setId(e.target.value)} placeholder="gen-… (prefix)" />
      </label>
      <label>
        Model
        <input
          value={f.model}
          onChange={(e) => f.setModel(e.target.value)}
          placeholder="vendor/model (prefix)"
        />
      </label>
      <label>
        App
        <input value={f.app} onChange={(e) => f.setApp(e.target.value)} placeholder="X-Title (prefix)" />
      </label>
      <label>
        Key
        <select value={f.keyId} onChange={(e) => f.setKeyId(e.target.value)}>
          <option value="">all keys</option>
          {props.keys
            .filter((k) => k.scope === 'inference')
            .map((k) => (
              <option key={k.hash} value={k.hash}>
                {k.name}
              </option>
            ))}
        </select>
      </label>
      <label>
        Usage source
        <select value={f.source} onChange={(e) => f.setSource(e.target.value)}>
          <option value="">any</option>
          <option value="provider">provider</option>
          <option value="estimated">estimated</option>
        </select>
      </label>
      <label>
        From ({zone})
        <input type="datetime-local" value={f.from} onChange={(e) => f.setFrom(e.target.value)} />
      </label>
      <label>
        To ({zone})
        <input type="datetime-local" value={f.to} onChange={(e) => f.setTo(e.target.value)} />
      </label>
    </fieldset>
  );
}

export function GenerationsPage(props: { openId: string | null }) {
  const { params, fields } = useFilters();
  const [sorting, setSorting] = useState<SortingState>([]);
  const { keys, names } = useKeyNames();
  const keyName = useMemo(() => (id: string) => names.get(id) ?? id.slice(0, 8), [names]);
  const sort = sorting[0];
  const list = useInfiniteQuery({
    queryKey: ['generations', params, sort?.id, sort?.desc],
    initialPageParam: null as Cursor,
    queryFn: async ({ pageParam }) => {
      const p = new URLSearchParams(params);
      p.set('limit', '50');
      if (sort) {
        p.set('sort', SORTS[sort.id] ?? 'created_at');
        p.set('order', sort.desc ? 'desc' : 'asc');
      }
      if (pageParam?.before) p.set('before', pageParam.before);
      if (pageParam?.offset) p.set('offset', String(pageParam.offset));
      return get<LogPage>(`/api/generations?${p}`);
    },
    getNextPageParam: (last): Cursor =>
      last.next_before
        ? { before: last.next_before }
        : last.next_offset
          ? { offset: last.next_offset }
          : null,
    refetchInterval: 5_000,
  });
  const data = list.data?.pages.flatMap((p) => p.data) ?? [];
  const cost = usdColumn(data.map((g) => g.cost));
  const columns = [
    col.accessor('created_at', { header: 'Time', cell: (c) => whenShort(c.getValue()) }),
    col.accessor('model', {
      header: 'Model',
      enableSorting: false,
      cell: (c) => <Clip text={c.getValue()} />,
    }),
    col.accessor('app', {
      header: 'App',
      enableSorting: false,
      cell: (c) => <Clip text={c.getValue() ?? '—'} />,
    }),
    col.accessor('key_id', {
      header: 'Key',
      enableSorting: false,
      cell: (c) => <Clip text={keyName(c.getValue())} />,
    }),
    col.accessor((g) => g.tokens_prompt + g.tokens_completion, {
      id: 'tokens',
      header: 'Tokens',
      cell: (c) => `${int(c.row.original.tokens_prompt)} / ${int(c.row.original.tokens_completion)}`,
      meta: { numeric: true },
    }),
    col.accessor((g) => Number(g.cost), {
      id: 'cost',
      header: 'Cost',
      cell: (c) => cost(c.row.original.cost),
      meta: { numeric: true },
    }),
    col.accessor('latency_ms', {
      id: 'latency',
      header: 'Latency',
      cell: (c) => ms(c.getValue()),
      meta: { numeric: true },
    }),
    col.display({
      id: 'status',
      header: 'Status',
      cell: (c) => {
        const g = c.row.original;
        return (
          <span className="row nowrap">
            <span>{g.cancelled ? 'cancelled' : (g.finish_reason ?? '—')}</span>
            {g.streamed ? <span className="muted small">stream</span> : null}
            {g.usage_source === 'estimated' ? <Badge kind="estimated">estimated</Badge> : null}
          </span>
        );
      },
    }),
    col.accessor('id', {
      header: 'Id',
      enableSorting: false,
      cell: (c) => <code className="small">{c.getValue().slice(0, 12)}…</code>,
    }),
  ];
  const navigate = useNavigate();
  const { search } = useLocation();
  // The filters' address stays: closing a record shows the same range.
  const open = (id: string | null) =>
    navigate({ pathname: id ? `/generations/${encodeURIComponent(id)}` : '/generations', search });
  return (
    <Page
      title="Generations"
      actions={
        <button type="button" className="secondary" onClick={() => list.refetch()}>
          Refresh
        </button>
      }
    >
      <Filters f={fields} keys={keys.data ?? []} />
      <SessionsPanel range={fields.range} selected={fields.session} onSelect={fields.setSession} />
      <ErrorBox error={list.error} onRetry={() => list.refetch()} />
      <KeyNamesError error={keys.error} onRetry={() => void keys.refetch()} />
      <DataTable
        label="Generations"
        data={data}
        columns={columns}
        loading={list.isPending}
        empty="No requests match (none recorded yet, or none in this filter)."
        onRowClick={(g) => open(g.id)}
        rowLabel={(g) => `Open generation ${g.id}`}
        rowTestId={(g) => `generation-${g.id}`}
        sorting={sorting}
        onSortingChange={setSorting}
      />
      {list.hasNextPage ? (
        <button type="button" className="secondary" onClick={() => list.fetchNextPage()}>
          Load more
        </button>
      ) : null}
      {props.openId ? (
        <GenerationDetail id={props.openId} keyName={keyName} onClose={() => open(null)} />
      ) : null}
    </Page>
  );
}
