import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { DashboardAnswer, DashboardData } from '@tollgate/contracts';
import { useState } from 'react';
import { api, get } from '../api';
import { ErrorBox, Loading, Page } from '../components/ui';
import { int } from '../format';
import { Budget } from './keys/budget';
import { CreateTeamForm, EditTeam } from './teams/team-forms';

type Team = DashboardData<'teams'>[number];
type User = DashboardData<'users'>[number];

/** Replaces a user's team memberships (`PUT /api/users/:id/teams`, owners; audited as `user.teams`). */
function useMembership() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (v: { user: User; teamIds: string[] }) =>
      api('PUT', `/api/users/${v.user.id}/teams`, { team_ids: v.teamIds }),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['teams'] });
      void queryClient.invalidateQueries({ queryKey: ['users'] });
    },
  });
}

/** The team's members; owners add and remove dashboard users (a user may be in several teams). */
function Members(props: { team: Team; users: User[] | null; owner: boolean }) {
  const { team, users, owner } = props;
  const membership = useMembership();
  const [adding, setAdding] = useState('');
  if (users === null)
    return (
      <p className="muted small">
        {int(team.member_ids.length)} {team.member_ids.length === 1 ? 'member' : 'members'}
      </p>
    );
  const members = users.filter((u) => team.member_ids.includes(u.id));
  const others = users.filter((u) => !team.member_ids.includes(u.id));
  const change = (user: User, teamIds: string[]) => membership.mutate({ user, teamIds });
  return (
    <div className="members">
      <h3>Members</h3>
      {members.length === 0 && <p className="muted small">No members yet.</p>}
      <ul className="member-list" aria-label={`Members of ${team.name}`}>
        {members.map((u) => (
          <li key={u.id}>
            <span>
              {u.display_name} <span className="muted small">{u.email}</span>
            </span>
            {owner && (
              <button
                type="button"
                className="secondary small-button"
                disabled={membership.isPending}
                aria-label={`Remove ${u.display_name} from ${team.name}`}
                onClick={() =>
                  change(
                    u,
                    u.team_ids.filter((t) => t !== team.id),
                  )
                }
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {owner && others.length > 0 && (
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            const user = others.find((u) => u.id === adding);
            if (user) change(user, [...user.team_ids, team.id]);
            setAdding('');
          }}
        >
          <select
            value={adding}
            onChange={(e) => setAdding(e.target.value)}
            aria-label={`Add a member to ${team.name}`}
          >
            <option value="">Choose a user…</option>
            {others.map((u) => (
              <option key={u.id} value={u.id}>
                {u.display_name} ({u.email})
              </option>
            ))}
          </select>
          <button type="submit" disabled={!adding || membership.isPending}>
            Add member
          </button>
        </form>
      )}
      <ErrorBox error={membership.error} />
    </div>
  );
}

/**
 * Teams (issue 29): each team's spend against its limit in the current period (the bar keys have:
 * what is left and when it resets), its keys and token-rate limit, its members. Owners change the
 * members, create teams and change or delete them (also possible with `/teams` of the management API
 * or the admin CLI); team viewers see only their own teams.
 */
export function TeamsPage(props: { owner: boolean; member: boolean }) {
  const teams = useQuery({
    queryKey: ['teams'],
    queryFn: async () => (await get<DashboardAnswer<'teams'>>('/api/teams')).data,
    refetchInterval: 10_000,
  });
  // Team viewers cannot list the account's users: their teams' members show as a count.
  const users = useQuery({
    queryKey: ['users'],
    queryFn: async () => (await get<DashboardAnswer<'users'>>('/api/users')).data,
    enabled: !props.member,
  });
  const [editing, setEditing] = useState<Team | null>(null);
  return (
    <Page title="Teams">
      <ErrorBox error={teams.error ?? users.error} onRetry={() => teams.refetch()} />
      {teams.isPending && <Loading />}
      {teams.data?.length === 0 && (
        <p className="muted">
          No teams yet{props.owner ? ': create one below' : ''} (or with <code>POST /api/v1/teams</code>,{' '}
          <code>pnpm tollgate teams create</code>).
        </p>
      )}
      <div className="team-grid">
        {teams.data?.map((t) => (
          <section key={t.id} className="card team" aria-label={`Team ${t.name}`} data-testid="team">
            <div className="row">
              <h2>{t.name}</h2>
              {props.owner && (
                <button
                  type="button"
                  className="secondary small-button"
                  aria-label={`Edit team ${t.name}`}
                  onClick={() => setEditing(t)}
                >
                  Edit
                </button>
              )}
            </div>
            <Budget k={t} />
            <p className="muted small">
              {int(t.key_count)} {t.key_count === 1 ? 'key' : 'keys'}
              {t.rate_limit_tpm !== null && ` · ${int(t.rate_limit_tpm)} tokens/min`}
              {' · '}
              <a href="#/usage?group_by=team">usage</a>
            </p>
            <Members team={t} users={props.member ? null : (users.data ?? [])} owner={props.owner} />
          </section>
        ))}
      </div>
      {props.owner && <CreateTeamForm />}
      {editing ? <EditTeam team={editing} onClose={() => setEditing(null)} /> : null}
    </Page>
  );
}
