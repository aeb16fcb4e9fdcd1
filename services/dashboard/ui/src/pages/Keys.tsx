import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { type FormEvent, useMemo, useState } from 'react';
import { api, get, type Key } from '../api';
import { DataTable } from '../components/DataTable';
import { Badge, CopyButton, ErrorBox, Modal, Page } from '../components/ui';
import { ago, usd, when } from '../format';

const col = createColumnHelper<Key>();

/** The limit period: '' is "never" (the limit is a total). */
function ResetSelect(props: { value: string; disabled?: boolean; onChange: (v: string) => void }) {
  return (
    <label>
      Limit reset
      <select value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">never</option>
        <option value="daily">daily</option>
        <option value="weekly">weekly</option>
        <option value="monthly">monthly</option>
      </select>
    </label>
  );
}

const stateOf = (k: Key) => (k.revoked ? 'revoked' : k.disabled ? 'disabled' : 'active');

/**
 * Access rules of a key (expiry, allowed models, request rate limit, BYOK flag) as form fields. Times
 * are UTC like everywhere in the dashboard: the `datetime-local` value is read as UTC.
 */
interface Access {
  expiresAt: string;
  allowedModels: string;
  rateLimitRpm: string;
  includeByok: boolean;
}

const accessOf = (k?: Key): Access => ({
  expiresAt: k?.expires_at ? k.expires_at.slice(0, 16) : '',
  allowedModels: k?.allowed_models.join(', ') ?? '',
  rateLimitRpm: k?.rate_limit_rpm == null ? '' : String(k.rate_limit_rpm),
  includeByok: k?.include_byok_in_limit ?? false,
});

/** The API's fields for the rules that differ from `from` (all of them when creating). */
function accessBody(a: Access, from?: Access): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (a.expiresAt !== from?.expiresAt) body.expires_at = a.expiresAt === '' ? null : `${a.expiresAt}:00Z`;
  if (a.allowedModels !== from?.allowedModels) {
    body.allowed_models = a.allowedModels
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean);
  }
  if (a.rateLimitRpm !== from?.rateLimitRpm) {
    body.rate_limit_rpm = a.rateLimitRpm === '' ? null : Number(a.rateLimitRpm);
  }
  if (a.includeByok !== from?.includeByok) body.include_byok_in_limit = a.includeByok;
  return body;
}

function AccessFields(props: { value: Access; management: boolean; onChange: (a: Access) => void }) {
  const set = (patch: Partial<Access>) => props.onChange({ ...props.value, ...patch });
  return (
    <>
      <label>
        Expires at (UTC)
        <input
          type="datetime-local"
          value={props.value.expiresAt}
          onChange={(e) => set({ expiresAt: e.target.value })}
        />
      </label>
      <label>
        Allowed models
        <input
          value={props.value.allowedModels}
          disabled={props.management}
          placeholder="all (ids or vendor/*, comma-separated)"
          onChange={(e) => set({ allowedModels: e.target.value })}
        />
      </label>
      <label>
        Rate limit (requests/min)
        <input
          type="number"
          min="1"
          step="1"
          value={props.value.rateLimitRpm}
          placeholder="none"
          onChange={(e) => set({ rateLimitRpm: e.target.value })}
        />
      </label>
      <label className="checkbox">
        <input
          type="checkbox"
          checked={props.value.includeByok}
          disabled={props.management}
          onChange={(e) => set({ includeByok: e.target.checked })}
        />
        Include BYOK usage in the spend limit (stored; no effect: Tollgate has no BYOK yet)
      </label>
    </>
  );
}

/** The rules column: what restricts the key besides its spend limit. */
function accessSummary(k: Key): string {
  const parts: string[] = [];
  if (k.expires_at) {
    parts.push(
      `${new Date(k.expires_at).getTime() <= Date.now() ? 'expired' : 'expires'} ${when(k.expires_at)}`,
    );
  }
  if (k.allowed_models.length > 0) parts.push(k.allowed_models.join(', '));
  if (k.rate_limit_rpm !== null) parts.push(`${k.rate_limit_rpm} rpm`);
  return parts.length > 0 ? parts.join(' · ') : '—';
}

function CreateKeyForm(props: { onCreated: (k: Key & { key: string }) => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [reset, setReset] = useState('');
  const [management, setManagement] = useState(false);
  const [access, setAccess] = useState(accessOf());
  const create = useMutation({
    mutationFn: () => {
      const rules = accessBody(access);
      return api<{ data: Key & { key: string } }>('POST', '/api/keys', {
        name,
        ...(management
          ? {
              management: true,
              expires_at: rules.expires_at,
              rate_limit_rpm: rules.rate_limit_rpm,
            }
          : {
              limit: limit === '' ? null : Number(limit),
              limit_reset: reset === '' ? null : reset,
              ...rules,
            }),
      });
    },
    onSuccess: (r) => {
      setName('');
      setLimit('');
      setReset('');
      setManagement(false);
      setAccess(accessOf());
      props.onCreated(r.data);
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Create a key">
      <h2>Create a key</h2>
      <label>
        Name
        <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
      </label>
      <label>
        Limit (USD)
        <input
          type="number"
          min="0"
          step="any"
          value={limit}
          disabled={management}
          placeholder="no limit"
          onChange={(e) => setLimit(e.target.value)}
        />
      </label>
      <ResetSelect value={reset} disabled={management} onChange={setReset} />
      <AccessFields value={access} management={management} onChange={setAccess} />
      <label className="checkbox">
        <input type="checkbox" checked={management} onChange={(e) => setManagement(e.target.checked)} />
        Management key (manages keys through the API; cannot run models; no spend limit)
      </label>
      <ErrorBox error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Create key
      </button>
    </form>
  );
}

function EditKey(props: { k: Key; onClose: () => void }) {
  const queryClient = useQueryClient();
  const management = props.k.scope === 'management';
  const [limit, setLimit] = useState(props.k.limit === null ? '' : String(props.k.limit));
  const [reset, setReset] = useState(props.k.limit_reset ?? '');
  const [access, setAccess] = useState(accessOf(props.k));
  const save = useMutation({
    mutationFn: () =>
      api('PATCH', `/api/keys/${props.k.hash}`, {
        ...(management
          ? {}
          : { limit: limit === '' ? null : Number(limit), limit_reset: reset === '' ? null : reset }),
        ...accessBody(access, accessOf(props.k)),
      }),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
      props.onClose();
    },
  });
  return (
    <Modal title={`Edit ${props.k.name}`} onClose={props.onClose}>
      <form
        className="form-grid"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        {management ? null : (
          <>
            <label>
              Limit (USD, empty for none)
              <input
                type="number"
                min="0"
                step="any"
                value={limit}
                onChange={(e) => setLimit(e.target.value)}
              />
            </label>
            <ResetSelect value={reset} onChange={setReset} />
          </>
        )}
        <AccessFields value={access} management={management} onChange={setAccess} />
        <ErrorBox error={save.error} />
        <div className="row">
          <button type="submit">{management ? 'Save access rules' : 'Save limit and access rules'}</button>
          <button type="button" className="secondary" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  );
}

function ConfirmRevoke(props: { k: Key; onClose: () => void }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => api('DELETE', `/api/keys/${props.k.hash}`),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
      props.onClose();
    },
  });
  return (
    <Modal title="Revoke key" onClose={props.onClose}>
      <p>
        Revoke <strong>{props.k.name}</strong> ({props.k.label})? Requests with it are refused at once. This
        cannot be undone; its usage history stays.
      </p>
      <ErrorBox error={revoke.error} />
      <div className="row">
        <button type="button" className="danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
          Revoke permanently
        </button>
        <button type="button" className="secondary" onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Modal>
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
    queryFn: async () => (await get<{ data: Key[] }>(`/api/keys?include_revoked=${showRevoked}`)).data,
    refetchInterval: 10_000,
  });
  const toggle = useMutation({
    mutationFn: (k: Key) => api('PATCH', `/api/keys/${k.hash}`, { disabled: !k.disabled }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  });

  const columns = useMemo(
    () => [
      col.accessor('name', {
        header: 'Name',
        cell: (c) => (
          <div>
            <div>{c.getValue()}</div>
            <code className="muted small">{c.row.original.label}</code>
          </div>
        ),
      }),
      col.accessor('scope', {
        header: 'Scope',
        cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
      }),
      col.accessor(stateOf, {
        id: 'state',
        header: 'State',
        cell: (c) => <Badge kind={c.getValue()}>{c.getValue()}</Badge>,
      }),
      col.accessor('limit', {
        header: 'Limit',
        cell: (c) =>
          c.getValue() === null ? 'none' : `${usd(c.getValue())} ${c.row.original.limit_reset ?? 'total'}`,
      }),
      col.accessor(accessSummary, { id: 'access', header: 'Access rules' }),
      col.accessor('usage', {
        header: 'Usage (period)',
        cell: (c) => (c.row.original.scope === 'management' ? '—' : usd(c.getValue())),
      }),
      col.accessor('last_used_at', { header: 'Last used', cell: (c) => ago(c.getValue()) }),
      col.display({
        id: 'actions',
        header: '',
        cell: (c) => {
          const k = c.row.original;
          if (!props.owner || k.revoked) return null;
          return (
            <div className="row actions">
              <button type="button" className="secondary" onClick={() => toggle.mutate(k)}>
                {k.disabled ? 'Enable' : 'Disable'}
              </button>
              <button type="button" className="secondary" onClick={() => setEditing(k)}>
                {k.scope === 'inference' ? 'Edit limit and access' : 'Edit access'}
              </button>
              <button type="button" className="danger" onClick={() => setRevoking(k)}>
                Revoke
              </button>
            </div>
          );
        },
      }),
    ],
    [props.owner, toggle],
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
      <ErrorBox error={keys.error ?? toggle.error} />
      <DataTable
        label="Keys"
        data={keys.data ?? []}
        columns={columns}
        empty="No keys."
        rowTestId={(k) => `key-${k.name}`}
      />
      {created ? (
        <Modal title="Your new key" onClose={() => setCreated(null)}>
          <p>
            Copy it now: this is the only time the {created.scope} key <strong>{created.name}</strong> is
            shown.
          </p>
          <code className="secret" data-testid="new-key">
            {created.key}
          </code>
          <div className="row">
            <CopyButton text={created.key} />
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </Modal>
      ) : null}
      {editing ? <EditKey k={editing} onClose={() => setEditing(null)} /> : null}
      {revoking ? <ConfirmRevoke k={revoking} onClose={() => setRevoking(null)} /> : null}
    </Page>
  );
}
