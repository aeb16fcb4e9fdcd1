import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer } from '@tollgate/contracts';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { api, get, type Key } from '../api';
import { DataTable } from '../components/DataTable';
import { Sparkline } from '../components/Sparkline';
import { Badge, ErrorBox, Page } from '../components/ui';
import { usd } from '../format';
import { ago } from '../time';
import { accessSummary } from './keys/access';
import { Budget, stateOf } from './keys/budget';
import { ConfirmRevoke, CreateKeyForm, EditKey, NewKeyDialog } from './keys/forms';

const col = createColumnHelper<Key>();
const DAY = 86_400_000;
const SPARK_DAYS = 14;

/** Requests and spend per key per UTC day over the last two weeks (one analytics call for every key). */
function useTraffic() {
  const to = new Date(Math.floor(Date.now() / DAY) * DAY + DAY);
  const fromMs = to.getTime() - SPARK_DAYS * DAY;
  const q = `from=${new Date(fromMs).toISOString()}&to=${to.toISOString()}&granularity=day&group_by=key`;
  const usage = useQuery({
    queryKey: ['usage', q],
    queryFn: async () => (await get<DashboardAnswer<'usage'>>(`/api/usage?${q}`)).data.rows,
    refetchInterval: 30_000,
  });
  return useMemo(() => {
    const byKey = new Map<string, { requests: number[]; cost: number[] }>();
    for (const r of usage.data ?? []) {
      if (!r.group || !r.bucket) continue;
      const i = Math.floor((new Date(r.bucket).getTime() - fromMs) / DAY);
      if (i < 0 || i >= SPARK_DAYS) continue;
      const t = byKey.get(r.group) ?? {
        requests: Array<number>(SPARK_DAYS).fill(0),
        cost: Array<number>(SPARK_DAYS).fill(0),
      };
      t.requests[i] = (t.requests[i] ?? 0) + r.requests;
      t.cost[i] = (t.cost[i] ?? 0) + Number(r.cost);
      byKey.set(r.group, t);
    }
    return byKey;
  }, [usage.data, fromMs]);
}

function Traffic(props: { k: Key; traffic: ReturnType<typeof useTraffic> }) {
  const t = props.traffic.get(props.k.hash);
  const requests = t?.requests.reduce((a, b) => a + b, 0) ?? 0;
  const cost = t?.cost.reduce((a, b) => a + b, 0) ?? 0;
  return (
    <Link className="traffic" to={`/generations?key_id=${props.k.hash}`} title="Open this key's requests">
      <Sparkline
        values={t?.requests ?? Array<number>(SPARK_DAYS).fill(0)}
        label={`${props.k.name}: ${requests} requests, ${usd(cost)} in ${SPARK_DAYS} days`}
      />
      <span className="small">
        {requests} req · {usd(cost)}
      </span>
    </Link>
  );
}

export function KeysPage(props: { owner: boolean }) {
  const queryClient = useQueryClient();
  const [showRevoked, setShowRevoked] = useState(false);
  const [created, setCreated] = useState<(Key & { key: string }) | null>(null);
  const [editing, setEditing] = useState<Key | null>(null);
  const [revoking, setRevoking] = useState<Key | null>(null);
  const keys = useQuery({
    queryKey: ['keys', showRevoked],
    queryFn: async () =>
      (await get<DashboardAnswer<'keys'>>(`/api/keys?include_revoked=${showRevoked}`)).data,
    refetchInterval: 10_000,
  });
  const traffic = useTraffic();
  const toggle = useMutation({
    mutationFn: (k: Key) => api('PATCH', `/api/keys/${k.hash}`, { disabled: !k.disabled }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  });

  const columns = useMemo(
    () => [
      col.accessor('name', {
        header: 'Name',
        cell: (c) => (
          <div className="key-name">
            <div>
              {c.getValue()} <Badge kind={c.row.original.scope}>{c.row.original.scope}</Badge>
            </div>
            <code className="muted small">{c.row.original.label}</code>
          </div>
        ),
        meta: { wrap: true },
      }),
      col.accessor(stateOf, {
        id: 'state',
        header: 'State',
        cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
      }),
      col.accessor('usage', {
        header: 'Spend and limit',
        cell: (c) => <Budget k={c.row.original} />,
      }),
      col.display({
        id: 'traffic',
        header: `Last ${SPARK_DAYS} days`,
        cell: (c) =>
          c.row.original.scope === 'inference' ? <Traffic k={c.row.original} traffic={traffic} /> : '—',
      }),
      col.accessor(accessSummary, { id: 'access', header: 'Access rules', meta: { wrap: true } }),
      col.accessor('last_used_at', { header: 'Last used', cell: (c) => ago(c.getValue()) }),
      col.display({
        id: 'actions',
        header: 'Actions',
        cell: (c) => {
          const k = c.row.original;
          if (!props.owner || k.revoked) return null;
          return (
            <div className="row actions">
              <button type="button" className="secondary" onClick={() => toggle.mutate(k)}>
                {k.disabled ? 'Enable' : 'Disable'}
              </button>
              <button
                type="button"
                className="secondary"
                aria-label={
                  k.scope === 'inference' ? `Edit limit and access of ${k.name}` : `Edit access of ${k.name}`
                }
                onClick={() => setEditing(k)}
              >
                Edit
              </button>
              <button type="button" className="danger" onClick={() => setRevoking(k)}>
                Revoke
              </button>
            </div>
          );
        },
      }),
    ],
    [props.owner, toggle, traffic],
  );

  return (
    <Page
      title="Keys"
      actions={
        <label className="checkbox">
          <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked(e.target.checked)} />
          Show revoked
        </label>
      }
    >
      {props.owner ? (
        <CreateKeyForm onCreated={setCreated} />
      ) : (
        <p className="muted" data-testid="viewer-note">
          You are a viewer: you see every key of the account and change nothing.
        </p>
      )}
      <ErrorBox error={keys.error ?? toggle.error} onRetry={keys.error ? () => keys.refetch() : undefined} />
      <DataTable
        label="Keys"
        data={keys.data ?? []}
        columns={columns}
        loading={keys.isPending}
        empty="No keys yet."
        rowTestId={(k) => `key-${k.name}`}
      />
      {created ? <NewKeyDialog created={created} onClose={() => setCreated(null)} /> : null}
      {editing ? <EditKey k={editing} onClose={() => setEditing(null)} /> : null}
      {revoking ? <ConfirmRevoke k={revoking} onClose={() => setRevoking(null)} /> : null}
    </Page>
  );
}
