import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useMemo, useState } from 'react';
import { type Generation, get, type Key } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, ErrorBox, Modal, Page } from '../components/ui';
import { int, usd, when } from '../format';

const col = createColumnHelper<Generation>();

function Detail(props: { id: string; keyName: (id: string) => string; onClose: () => void }) {
  const g = useQuery({
    queryKey: ['generation', props.id],
    queryFn: async () =>
      (await get<{ data: Generation }>(`/api/generations/${encodeURIComponent(props.id)}`)).data,
  });
  const rows: Array<[string, string]> = g.data
    ? [
        ['id', g.data.id],
        ['time', when(g.data.created_at)],
        ['finished', when(g.data.finished_at)],
        ['model', g.data.model],
        ['provider', `${g.data.provider_name} (${g.data.upstream_model})`],
        ['upstream id', g.data.upstream_id ?? '—'],
        ['app (X-Title)', g.data.app ?? '—'],
        ['key', props.keyName(g.data.key_id)],
        ['prompt tokens', int(g.data.tokens_prompt)],
        ['completion tokens', int(g.data.tokens_completion)],
        ['cached tokens', int(g.data.tokens_cached)],
        ['cache write tokens', int(g.data.tokens_cache_write)],
        ['reasoning tokens', int(g.data.tokens_reasoning)],
        ['cost', `${usd(g.data.cost)} (${g.data.cost} USD)`],
        ['usage source', g.data.usage_source],
        ['streamed', String(g.data.streamed)],
        ['cancelled', String(g.data.cancelled)],
        ['finish reason', g.data.finish_reason ?? '—'],
        ['latency', `${g.data.latency_ms} ms`],
        ['generation time', `${g.data.generation_time_ms} ms`],
        ['BYOK', String(g.data.is_byok)],
        ['error', g.data.error ? `${g.data.error.code} ${g.data.error.message}` : '—'],
      ]
    : [];
  return (
    <Modal title="Generation" onClose={props.onClose}>
      <ErrorBox error={g.error} />
      <dl className="detail" data-testid="generation-detail">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={props.onClose}>
        Close
      </button>
    </Modal>
  );
}

export function GenerationsPage() {
  const [model, setModel] = useState('');
  const [app, setApp] = useState('');
  const [keyId, setKeyId] = useState('');
  const [source, setSource] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  const keys = useQuery({
    queryKey: ['keys', true],
    queryFn: async () => (await get<{ data: Key[] }>('/api/keys?include_revoked=true')).data,
  });
  const keyName = useMemo(() => {
    const m = new Map((keys.data ?? []).map((k) => [k.hash, k.name]));
    return (id: string) => m.get(id) ?? id.slice(0, 8);
  }, [keys.data]);
  const filters = new URLSearchParams();
  if (model) filters.set('model', model);
  if (app) filters.set('app', app);
  if (keyId) filters.set('key_id', keyId);
  if (source) filters.set('usage_source', source);
  const list = useInfiniteQuery({
    queryKey: ['generations', filters.toString()],
    initialPageParam: null as string | null,
    queryFn: async ({ pageParam }) => {
      const p = new URLSearchParams(filters);
      p.set('limit', '50');
      if (pageParam) p.set('before', pageParam);
      return get<{ data: Generation[]; next_before: string | null }>(`/api/generations?${p}`);
    },
    getNextPageParam: (last) => last.next_before,
    refetchInterval: 5_000,
  });
  const data = list.data?.pages.flatMap((p) => p.data) ?? [];
  const columns = [
    col.accessor('created_at', { header: 'Time', cell: (c) => when(c.getValue()).slice(5, 19) }),
    col.accessor('model', { header: 'Model' }),
    col.accessor('app', { header: 'App', cell: (c) => c.getValue() ?? '—' }),
    col.accessor('key_id', { header: 'Key', cell: (c) => keyName(c.getValue()) }),
    col.accessor((g) => g.tokens_prompt + g.tokens_completion, {
      id: 'tokens',
      header: 'Tokens',
      cell: (c) => `${int(c.row.original.tokens_prompt)} / ${int(c.row.original.tokens_completion)}`,
    }),
    col.accessor((g) => Number(g.cost), {
      id: 'cost',
      header: 'Cost',
      cell: (c) => usd(c.row.original.cost),
    }),
    col.accessor('usage_source', {
      header: 'Usage',
      cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
    }),
    col.accessor('streamed', { header: 'Stream', cell: (c) => (c.getValue() ? 'yes' : 'no') }),
    col.accessor('cancelled', { header: 'Cancelled', cell: (c) => (c.getValue() ? 'yes' : 'no') }),
    col.accessor('finish_reason', { header: 'Finish', cell: (c) => c.getValue() ?? '—' }),
    col.accessor('id', {
      header: 'Id',
      cell: (c) => <code className="small">{c.getValue().slice(0, 18)}…</code>,
    }),
  ];
  return (
    <Page
      title="Generations"
      actions={
        <button type="button" className="secondary" onClick={() => list.refetch()}>
          Refresh
        </button>
      }
    >
      <fieldset className="card controls" aria-label="Filters">
        <label>
          Model
          <input value={model} onChange={(e) => setModel(e.target.value)} placeholder="vendor/model" />
        </label>
        <label>
          App
          <input value={app} onChange={(e) => setApp(e.target.value)} placeholder="X-Title" />
        </label>
        <label>
          Key
          <select value={keyId} onChange={(e) => setKeyId(e.target.value)}>
            <option value="">all keys</option>
            {(keys.data ?? [])
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
          <select value={source} onChange={(e) => setSource(e.target.value)}>
            <option value="">any</option>
            <option value="provider">provider</option>
            <option value="estimated">estimated</option>
          </select>
        </label>
      </fieldset>
      <ErrorBox error={list.error} />
      <DataTable
        label="Generations"
        data={data}
        columns={columns}
        empty="No requests recorded yet."
        onRowClick={(g) => setSelected(g.id)}
        rowTestId={(g) => `generation-${g.id}`}
      />
      {list.hasNextPage ? (
        <button type="button" className="secondary" onClick={() => list.fetchNextPage()}>
          Load more
        </button>
      ) : null}
      {selected ? <Detail id={selected} keyName={keyName} onClose={() => setSelected(null)} /> : null}
    </Page>
  );
}
