import type { TeamMember } from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import { sql } from 'kysely';
import type { DashboardDb } from '../database';
import { lockUser } from '../users/users.repository';
import { type ManagementKeyActor, recordUserChange } from '../users/users-audit';
import { addMembership, joinedAt, membersOfTeam, removeMembership, teamsOf } from './team-members.repository';

/** A user named by id or by email (case-insensitive), as `POST /teams/{id}/members` takes it. */
type UserRef = { user_id?: string | undefined; email?: string | undefined };

/**
 * The members of one team, for the management API's `/teams/{id}/members` (the keys service checked
 * the team is the account's). Each change locks the user (as an owner's `PUT /api/users/{id}/teams`
 * and the CLI's `users set-teams` do, so concurrent changes of one user's teams serialise) and is
 * audited as `user.teams` with the user's teams before and after, by the management key.
 */
export interface TeamMembersService {
  list(accountId: string, teamId: string): Promise<TeamMember[]>;
  /** `added` false: already a member (no change, no entry). 404 for a user not of the account. */
  add(
    accountId: string,
    teamId: string,
    user: UserRef,
    actor: ManagementKeyActor,
  ): Promise<{ member: TeamMember; added: boolean }>;
  /** 404 unless the user is a member of the team. */
  remove(accountId: string, teamId: string, userId: string, actor: ManagementKeyActor): Promise<void>;
}

const memberOf = (
  u: { id: string; email: string; display_name: string; role: TeamMember['role'] },
  added: Date,
): TeamMember => ({
  id: u.id,
  email: u.email,
  display_name: u.display_name,
  role: u.role,
  added_at: added.toISOString(),
});

function lockUserByRef(trx: DashboardDb, accountId: string, ref: UserRef) {
  if (ref.user_id !== undefined) return lockUser(trx, accountId, ref.user_id.toLowerCase());
  return trx
    .selectFrom('dashboard.users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where(sql<boolean>`lower(email) = lower(${ref.email ?? ''})`)
    .forUpdate()
    .executeTakeFirst();
}

export function createTeamMembersService(db: DashboardDb): TeamMembersService {
  return {
    async list(accountId, teamId) {
      const rows = await membersOfTeam(db, accountId, teamId);
      return rows.map((r) => memberOf(r, r.added_at));
    },

    add: (accountId, teamId, ref, actor) =>
      db.transaction().execute(async (trx) => {
        const user = await lockUserByRef(trx, accountId, ref);
        if (!user) throw notFound(`No dashboard user ${ref.user_id ?? ref.email} in this account`);
        const already = await joinedAt(trx, teamId, user.id);
        if (already) return { member: memberOf(user, already), added: false };
        const before = await teamsOf(trx, user.id);
        const at = await addMembership(trx, accountId, teamId, user.id);
        await recordUserChange(trx, actor, {
          accountId,
          action: 'user.teams',
          userId: user.id,
          before: { email: user.email, teams: before },
          after: { email: user.email, teams: [...before, teamId].sort() },
        });
        return { member: memberOf(user, at), added: true };
      }),

    remove: (accountId, teamId, userId, actor) =>
      db.transaction().execute(async (trx) => {
        const user = await lockUser(trx, accountId, userId.toLowerCase());
        const before = user ? await teamsOf(trx, user.id) : [];
        if (!user || !before.includes(teamId)) throw notFound(`No member ${userId} in this team`);
        await removeMembership(trx, teamId, user.id);
        await recordUserChange(trx, actor, {
          accountId,
          action: 'user.teams',
          userId: user.id,
          before: { email: user.email, teams: before },
          after: { email: user.email, teams: before.filter((t) => t !== teamId) },
        });
      }),
  };
}
