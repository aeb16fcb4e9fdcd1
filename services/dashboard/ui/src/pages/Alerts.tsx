import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { type FormEvent, useState } from 'react';
import { api, get } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, Clip, CopyButton, ErrorBox, Modal, Page } from '../components/ui';
import { ms, usd } from '../format';
import { when } from '../time';

type Webhook = DashboardData<'webhooks'>[number];
type Attempt = DashboardData<'deliveries'>[number];
const hookCol = createColumnHelper<Webhook>();
const logCol = createColumnHelper<Attempt>();

/** "50, 80, 100" → [50, 80, 100]; billing checks the range (its 400 names the field). */
const percentages = (text: string) =>
  text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);

function AddWebhook(props: { onSecret: (secret: string) => void }) {
  const queryClient = useQueryClient();
  const [url, setUrl] = useState('');
  const [thresholds, setThresholds] = useState('50, 80, 100');
  const [lowCredit, setLowCredit] = useState('');
  const add = useMutation({
    mutationFn: () =>
      api<DashboardAnswer<'createWebhook'>>('POST', '/api/webhooks', {
        url,
        thresholds: percentages(thresholds),
        low_credit: lowCredit.trim() === '' ? null : Number(lowCredit),
      }),
    onSuccess: (r) => {
      props.onSecret(r.data.secret);
      setUrl('');
      void queryClient.invalidateQueries({ queryKey: ['webhooks'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Add a webhook">
      <h2>Add a webhook</h2>
      <label>
        URL
        <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required maxLength={2048} />
      </label>
      <label>
        Thresholds (% of a key's limit or of prepaid credits)
        <input value={thresholds} onChange={(e) => setThresholds(e.target.value)} required />
      </label>
      <label>
        Low-credit alert below (USD, empty: none)
        <input inputMode="decimal" value={lowCredit} onChange={(e) => setLowCredit(e.target.value)} />
      </label>
      <ErrorBox error={add.error} />
      <button type="submit" disabled={add.isPending}>
        Add
      </button>
    </form>
  );
}

function DeliveryLog(props: { webhook: Webhook }) {
  const q = useQuery({
    queryKey: ['webhook-log', props.webhook.id],
    queryFn: async () =>
      (await get<DashboardAnswer<'deliveries'>>(`/api/webhooks/${props.webhook.id}/deliveries?limit=100`))
        .data,
    refetchInterval: 5000,
  });
  return (
    <>
      <ErrorBox error={q.error} onRetry={() => q.refetch()} />
      <DataTable
        label={`Delivery log of ${props.webhook.url}`}
        data={q.data ?? []}
        loading={q.isPending}
        columns={[
          logCol.accessor('attempted_at', { header: 'Time', cell: (c) => when(c.getValue()) }),
          logCol.accessor('type', { header: 'Message' }),
          logCol.accessor('attempt', { header: 'Attempt', meta: { numeric: true } }),
          logCol.accessor('status_code', { header: 'Status', cell: (c) => c.getValue() ?? '—' }),
          logCol.accessor('latency_ms', {
            header: 'Latency',
            cell: (c) => ms(c.getValue()),
            meta: { numeric: true },
          }),
          logCol.accessor('delivery_status', {
            header: 'Delivery',
            cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
          }),
          logCol.accessor('error', {
            header: 'Error',
            cell: (c) => c.getValue() ?? '',
            meta: { wrap: true },
          }),
        ]}
        empty="No delivery yet."
      />
    </>
  );
}

/**
 * Alerts: the account's webhook endpoints (spend thresholds of key limits and prepaid credits, low
 * credits), their delivery log and a send-test button. Owners change them; viewers read them.
 */
export function AlertsPage(props: { owner: boolean }) {
  const queryClient = useQueryClient();
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const q = useQuery({
    queryKey: ['webhooks'],
    queryFn: async () => (await get<DashboardAnswer<'webhooks'>>('/api/webhooks')).data,
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ['webhooks'] });
    void queryClient.invalidateQueries({ queryKey: ['webhook-log'] });
  };
  const test = useMutation({
    mutationFn: (id: string) => api('POST', `/api/webhooks/${id}/test`),
    onSettled: (_r, _e, id) => {
      setOpen(id);
      refresh();
    },
  });
  const change = useMutation({
    mutationFn: (v: { id: string; enabled?: boolean; remove?: boolean }) =>
      v.remove
        ? api('DELETE', `/api/webhooks/${v.id}`)
        : api('PATCH', `/api/webhooks/${v.id}`, { enabled: v.enabled }),
    onSettled: refresh,
  });
  const hooks = q.data ?? [];
  const shown = hooks.find((h) => h.id === open);
  return (
    <Page title="Alerts">
      <p className="muted">
        Signed webhooks (Standard Webhooks) when a key's spend reaches a percentage of its limit, when an
        account's spend reaches a percentage of its prepaid credits, and when credits left fall below an
        amount — once per threshold per period.
      </p>
      <ErrorBox error={q.error ?? test.error ?? change.error} onRetry={() => q.refetch()} />
      <DataTable
        label="Webhooks"
        data={hooks}
        loading={q.isPending}
        columns={[
          hookCol.accessor('url', { header: 'URL', cell: (c) => <Clip text={c.getValue()} /> }),
          hookCol.accessor((h) => h.thresholds.map((t) => `${t} %`).join(', '), {
            id: 'thresholds',
            header: 'Thresholds',
          }),
          hookCol.accessor('low_credit', {
            header: 'Low credit',
            cell: (c) => (c.getValue() === null ? '—' : usd(c.getValue())),
          }),
          hookCol.accessor('enabled', {
            header: 'State',
            cell: (c) => (
              <Badge kind={c.getValue() ? 'active' : 'disabled'}>{c.getValue() ? 'on' : 'off'}</Badge>
            ),
          }),
          hookCol.display({
            id: 'actions',
            header: '',
            cell: (c) => {
              const h = c.row.original;
              return (
                <div className="row actions">
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => setOpen(open === h.id ? null : h.id)}
                  >
                    {open === h.id ? 'Hide log' : 'Delivery log'}
                  </button>
                  {props.owner ? (
                    <>
                      <button type="button" disabled={test.isPending} onClick={() => test.mutate(h.id)}>
                        Send test
                      </button>
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => change.mutate({ id: h.id, enabled: !h.enabled })}
                      >
                        {h.enabled ? 'Turn off' : 'Turn on'}
                      </button>
                      <button
                        type="button"
                        className="danger"
                        onClick={() => change.mutate({ id: h.id, remove: true })}
                      >
                        Delete
                      </button>
                    </>
                  ) : null}
                </div>
              );
            },
          }),
        ]}
        empty="No webhook yet."
      />
      {shown ? <DeliveryLog webhook={shown} /> : null}
      {props.owner ? <AddWebhook onSecret={setSecret} /> : null}
      {secret ? (
        <Modal title="Signing secret" onClose={() => setSecret(null)} dismissable={false}>
          <p>Verify each delivery's signature with this secret. It is shown this once only.</p>
          <code className="secret" data-testid="webhook-secret">
            {secret}
          </code>
          <div className="row actions">
            <CopyButton text={secret} />
            <button type="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </Modal>
      ) : null}
    </Page>
  );
}
