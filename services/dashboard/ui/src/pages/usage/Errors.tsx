import { useQuery } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { type FormEvent, useMemo, useState } from 'react';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { get } from '../../api';
import { DataTable } from '../../components/DataTable';
import { Clip, ErrorBox, KeyNamesError } from '../../components/ui';
import { int } from '../../format';
import { useKeyNames } from '../../hooks/useKeyNames';
import { when } from '../../time';

type ErrorsData = DashboardAnswer<'errors'>['data']['rows'][number];
type ErrorsRow = ErrorsData & {
  /** The key's name, or its id's prefix until the key list has answered. */
  name: string;
};
type Refusal = DashboardAnswer<'refusal'>['data'];
type RefusalType = Refusal['error_type'];
/** Every refusal type of the contract (the Record makes a new one a type error here). */
const TYPE_LABEL: Record<RefusalType, string> = {
  limit: 'Limit',
  rate_limit: 'Rate limit',
  auth: 'Auth',
  bad_request: 'Bad request',
  provider: 'Provider',
  other: 'Other',
};
const TYPES = Object.keys(TYPE_LABEL) as RefusalType[];
const pct = (r: number) => `${(r * 100).toFixed(1)} %`;
const refusedOf = (r: ErrorsData) => TYPES.reduce((a, t) => a + r.refused[t], 0);
const col = createColumnHelper<ErrorsRow>();
const refusalCol = createColumnHelper<Refusal>();

/** The error rate per UTC day of the range, refused requests included (billing's roll-ups). */
function ErrorRateChart(props: { rows: ErrorsData[] }) {
  const data = props.rows.map((r) => ({
    day: (r.bucket ?? '').slice(0, 10),
    rate: Math.round(r.error_rate * 1000) / 10,
    answered: r.requests + refusedOf(r),
  }));
  return (
    <div className="chart" data-testid="error-rate-chart" role="img" aria-label="Error rate per UTC day">
      <ResponsiveContainer width="100%" height={180}>
        <BarChart data={data} margin={{ left: 0, right: 8, top: 8 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="day" tick={{ fontSize: 11 }} />
          <YAxis unit=" %" tick={{ fontSize: 11 }} width={48} domain={[0, 100]} />
          <Tooltip formatter={(v) => [`${v} %`, 'error rate']} labelFormatter={(d) => `${d} (UTC day)`} />
          <Bar dataKey="rate" name="error rate" fill="#b42318" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

/** Finds a request by the id it answered with (`X-Request-Id` / `X-Generation-Id`): its refusal, if any. */
function RefusalLookup() {
  const [id, setId] = useState('');
  const [asked, setAsked] = useState<string | null>(null);
  const q = useQuery({
    queryKey: ['refusal', asked],
    enabled: asked !== null,
    retry: false,
    queryFn: async () =>
      (await get<DashboardAnswer<'refusal'>>(`/api/refusals/${encodeURIComponent(asked ?? '')}`)).data,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setAsked(id.trim());
  };
  return (
    <form className="toolbar" onSubmit={submit} aria-label="Find a refused request by id">
      <label>
        Request id
        <input value={id} onChange={(e) => setId(e.target.value)} placeholder="gen-…" spellCheck={false} />
      </label>
      <button type="submit">Find refusal</button>
      {q.data ? (
        <p data-testid="refusal-found">
          {when(q.data.created_at)}: {q.data.status} {TYPE_LABEL[q.data.error_type]} ({q.data.code}) —{' '}
          <Clip text={q.data.message} />
        </p>
      ) : q.error ? (
        <p className="muted" data-testid="refusal-missing">
          No refusal with this id (a generation? see Generations).
        </p>
      ) : null}
    </form>
  );
}

/**
 * Errors and refusals as data: the error rate per day, every key's answered and refused requests by
 * error type, the last refusals of a key (billing keeps 50 per key), and a lookup by request id.
 */
export function ErrorsSection(props: { from: string; to: string }) {
  const [key, setKey] = useState<string | null>(null);
  const { keys, names } = useKeyNames();
  const keyName = (hash: string) => names.get(hash) ?? hash.slice(0, 8);
  const range = `from=${props.from}&to=${props.to}`;
  const daily = useQuery({
    queryKey: ['errors', range, 'day'],
    queryFn: async () =>
      (await get<DashboardAnswer<'errors'>>(`/api/errors?${range}&granularity=day`)).data.rows,
    refetchInterval: 10_000,
  });
  const byKey = useQuery({
    queryKey: ['errors', range, 'key'],
    queryFn: async () =>
      (await get<DashboardAnswer<'errors'>>(`/api/errors?${range}&granularity=total&group_by=key`)).data.rows,
    refetchInterval: 10_000,
  });
  const rows = useMemo(
    () =>
      (byKey.data ?? []).map((r) => ({
        ...r,
        name: names.get(r.group ?? '') ?? (r.group ?? '').slice(0, 8),
      })),
    [byKey.data, names],
  );
  const recent = useQuery({
    queryKey: ['refusals', key],
    enabled: key !== null,
    queryFn: async () =>
      (await get<DashboardAnswer<'refusals'>>(`/api/refusals?key_id=${key}&limit=20`)).data,
  });
  const columns = [
    // The name is part of the row (not computed by the column): the table caches a row's values until
    // its data changes, so a name computed here before the key list answered would stay a prefix.
    col.accessor('name', {
      id: 'key',
      header: 'Key',
      cell: (c) => <Clip text={c.getValue()} />,
    }),
    col.accessor((r) => r.requests + refusedOf(r), {
      id: 'answered',
      header: 'Answered',
      cell: (c) => int(c.getValue()),
      meta: { numeric: true },
    }),
    col.accessor('error_rate', {
      header: 'Error rate',
      cell: (c) => pct(c.getValue()),
      meta: { numeric: true },
    }),
    ...TYPES.map((t) =>
      col.accessor((r) => r.refused[t], {
        id: t,
        header: TYPE_LABEL[t],
        cell: (c) => int(c.getValue()),
        meta: { numeric: true },
      }),
    ),
  ];
  const refusalColumns = [
    refusalCol.accessor('created_at', { header: 'When', cell: (c) => when(c.getValue()) }),
    refusalCol.accessor('status', { header: 'Status', meta: { numeric: true } }),
    refusalCol.accessor((r) => TYPE_LABEL[r.error_type], { id: 'type', header: 'Type' }),
    refusalCol.accessor('message', { header: 'Message', cell: (c) => <Clip text={c.getValue()} /> }),
    refusalCol.accessor('id', { header: 'Request id', cell: (c) => <code>{c.getValue()}</code> }),
  ];
  return (
    <section className="card" aria-labelledby="errors-title">
      <h2 id="errors-title">Errors and refusals</h2>
      <p className="muted small">
        Every answered request: served, failed at the provider, or refused before anything was billed. Days
        are UTC.
      </p>
      <ErrorBox error={daily.error ?? byKey.error} onRetry={() => void daily.refetch()} />
      <KeyNamesError error={keys.error} onRetry={() => void keys.refetch()} />
      <ErrorRateChart rows={daily.data ?? []} />
      <DataTable
        label="Refusals per key"
        data={rows}
        columns={columns}
        loading={byKey.isPending}
        empty="No requests in this range."
        rowTestId={(r) => `errors-${r.group ?? 'all'}`}
        onRowClick={(r) => setKey(r.group)}
        rowLabel={(r) => `Last refusals of ${keyName(r.group ?? '')}`}
      />
      {key ? (
        <>
          <h3>Last refusals of {keyName(key)}</h3>
          <DataTable
            label="Last refusals"
            data={recent.data ?? []}
            columns={refusalColumns}
            loading={recent.isPending}
            empty="No refusals kept for this key."
            rowTestId={(r) => `refusal-${r.id}`}
          />
        </>
      ) : (
        <p className="muted small">Choose a key to list its last refusals.</p>
      )}
      <RefusalLookup />
    </section>
  );
}
