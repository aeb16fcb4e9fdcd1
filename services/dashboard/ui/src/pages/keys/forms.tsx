import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer } from '@tollgate/contracts';
import { LIMIT_RESETS } from '@tollgate/money';
import { type FormEvent, useState } from 'react';
import { api, get, type Key } from '../../api';
import { CopyButton, ErrorBox, Modal } from '../../components/ui';
import { AccessFields, accessBody, accessOf } from './access';

/** The limit period: '' is "never" (the limit is a total). */
export function ResetSelect(props: { value: string; disabled?: boolean; onChange: (v: string) => void }) {
  return (
    <label>
      Limit reset
      <select value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">never</option>
        {LIMIT_RESETS.map((period) => (
          <option key={period} value={period}>
            {period}
          </option>
        ))}
      </select>
    </label>
  );
}

export function CreateKeyForm(props: { onCreated: (k: Key & { key: string }) => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [limit, setLimit] = useState('');
  const [reset, setReset] = useState('');
  const [management, setManagement] = useState(false);
  const [access, setAccess] = useState(accessOf());
  const create = useMutation({
    mutationFn: () => {
      const rules = accessBody(access);
      return api<DashboardAnswer<'createKey'>>('POST', '/api/keys', {
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

/** The team a key belongs to ('' = none): its spend also counts against the team's limit. */
function TeamSelect(props: { value: string; onChange: (v: string) => void }) {
  const teams = useQuery({
    queryKey: ['teams'],
    queryFn: async () => (await get<DashboardAnswer<'teams'>>('/api/teams')).data,
  });
  return (
    <label>
      Team
      <select value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">no team</option>
        {(teams.data ?? []).map((t) => (
          <option key={t.id} value={t.id}>
            {t.name}
          </option>
        ))}
      </select>
    </label>
  );
}

export function EditKey(props: { k: Key; onClose: () => void }) {
  const queryClient = useQueryClient();
  const management = props.k.scope === 'management';
  const [team, setTeam] = useState(props.k.team_id ?? '');
  const [limit, setLimit] = useState(props.k.limit === null ? '' : String(props.k.limit));
  const [reset, setReset] = useState(props.k.limit_reset ?? '');
  const [access, setAccess] = useState(accessOf(props.k));
  const save = useMutation({
    mutationFn: () =>
      api('PATCH', `/api/keys/${props.k.hash}`, {
        ...(management
          ? {}
          : { limit: limit === '' ? null : Number(limit), limit_reset: reset === '' ? null : reset }),
        ...(management || team === (props.k.team_id ?? '') ? {} : { team_id: team === '' ? null : team }),
        ...accessBody(access, accessOf(props.k)),
      }),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
      void queryClient.invalidateQueries({ queryKey: ['teams'] });
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
            <TeamSelect value={team} onChange={setTeam} />
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

export function ConfirmRevoke(props: { k: Key; onClose: () => void }) {
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

/** The plaintext of a new key, shown once: Escape does not close it, only "Done" (after copying). */
export function NewKeyDialog(props: { created: Key & { key: string }; onClose: () => void }) {
  const { created } = props;
  return (
    <Modal title="Your new key" onClose={props.onClose} dismissable={false}>
      <p>
        Copy it now: this is the only time the {created.scope} key <strong>{created.name}</strong> is shown.
      </p>
      <code className="secret" data-testid="new-key">
        {created.key}
      </code>
      <div className="row">
        <CopyButton text={created.key} />
        <button type="button" onClick={props.onClose}>
          Done
        </button>
      </div>
    </Modal>
  );
}
