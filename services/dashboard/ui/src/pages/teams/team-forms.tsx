import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { DashboardData } from '@tollgate/contracts';
import { type FormEvent, useState } from 'react';
import { api } from '../../api';
import { ErrorBox, Modal } from '../../components/ui';
import { ResetSelect } from '../keys/forms';

type Team = DashboardData<'teams'>[number];

/** A team's settings as form fields: '' is "none" for the limit, its reset and the token rate. */
interface Settings {
  name: string;
  limit: string;
  reset: string;
  tpm: string;
}

const settingsOf = (t?: Team): Settings => ({
  name: t?.name ?? '',
  limit: t?.limit == null ? '' : String(t.limit),
  reset: t?.limit_reset ?? '',
  tpm: t?.rate_limit_tpm == null ? '' : String(t.rate_limit_tpm),
});

/** The API body (`POST/PATCH /api/teams`): every field, null clearing it. */
const bodyOf = (s: Settings) => ({
  name: s.name,
  limit: s.limit === '' ? null : Number(s.limit),
  limit_reset: s.reset === '' ? null : s.reset,
  rate_limit_tpm: s.tpm === '' ? null : Number(s.tpm),
});

function TeamFields(props: { value: Settings; onChange: (s: Settings) => void }) {
  const set = (patch: Partial<Settings>) => props.onChange({ ...props.value, ...patch });
  return (
    <>
      <label>
        Name
        <input
          value={props.value.name}
          onChange={(e) => set({ name: e.target.value })}
          required
          maxLength={200}
        />
      </label>
      <label>
        Limit (USD, empty for none)
        <input
          type="number"
          min="0"
          step="any"
          value={props.value.limit}
          placeholder="no limit"
          onChange={(e) => set({ limit: e.target.value })}
        />
      </label>
      <ResetSelect value={props.value.reset} onChange={(reset) => set({ reset })} />
      <label>
        Tokens per minute (empty for none)
        <input
          type="number"
          min="1"
          step="1"
          value={props.value.tpm}
          placeholder="no limit"
          onChange={(e) => set({ tpm: e.target.value })}
        />
      </label>
    </>
  );
}

function useTeamsChange<T>(mutationFn: (v: T) => Promise<unknown>, onSuccess: () => void) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn,
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['teams'] });
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
      onSuccess();
    },
  });
}

/** Owners make a team: a name, an optional USD limit with its reset, an optional token rate. */
export function CreateTeamForm() {
  const [settings, setSettings] = useState(settingsOf());
  const create = useTeamsChange(
    (s: Settings) => api('POST', '/api/teams', bodyOf(s)),
    () => setSettings(settingsOf()),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate(settings);
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Create a team">
      <h2>Create a team</h2>
      <TeamFields value={settings} onChange={setSettings} />
      <ErrorBox error={create.error} />
      <button type="submit" disabled={create.isPending}>
        Create team
      </button>
    </form>
  );
}

/** Rename a team, change its limits, or delete it (refused while keys are in it). */
export function EditTeam(props: { team: Team; onClose: () => void }) {
  const [settings, setSettings] = useState(settingsOf(props.team));
  const save = useTeamsChange(
    (s: Settings) => api('PATCH', `/api/teams/${props.team.id}`, bodyOf(s)),
    props.onClose,
  );
  const remove = useTeamsChange(() => api('DELETE', `/api/teams/${props.team.id}`), props.onClose);
  return (
    <Modal title={`Edit ${props.team.name}`} onClose={props.onClose}>
      <form
        className="form-grid"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(settings);
        }}
      >
        <TeamFields value={settings} onChange={setSettings} />
        <ErrorBox error={save.error ?? remove.error} />
        <div className="row">
          <button type="submit" disabled={save.isPending}>
            Save team
          </button>
          <button type="button" className="secondary" onClick={props.onClose}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            disabled={remove.isPending}
            onClick={() => remove.mutate(undefined)}
            title="A team with keys cannot be deleted: move its keys out first"
          >
            Delete team
          </button>
        </div>
      </form>
    </Modal>
  );
}
