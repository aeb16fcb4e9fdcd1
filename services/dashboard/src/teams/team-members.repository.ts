import type { DashboardDb } from '../database';

/** The teams the user is a member of (ids, sorted). */
export async function teamsOf(db: DashboardDb, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('dashboard.team_members')
    .select('team_id')
    .where('user_id', '=', userId)
    .orderBy('team_id')
    .execute();
  return rows.map((r) => r.team_id);
}

/** Every membership of the account's users (user id → team ids). */
export async function membershipsOf(db: DashboardDb, accountId: string): Promise<Map<string, string[]>> {
  const rows = await db
    .selectFrom('dashboard.team_members')
    .select(['user_id', 'team_id'])
    .where('account_id', '=', accountId)
    .orderBy('team_id')
    .execute();
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.user_id, [...(out.get(r.user_id) ?? []), r.team_id]);
  return out;
}

/** Makes the user's memberships exactly `teams` (inside the caller's transaction). */
export async function replaceTeams(db: DashboardDb, accountId: string, userId: string, teams: string[]) {
  await db.deleteFrom('dashboard.team_members').where('user_id', '=', userId).execute();
  if (teams.length === 0) return;
  await db
    .insertInto('dashboard.team_members')
    .values(teams.map((team_id) => ({ team_id, user_id: userId, account_id: accountId })))
    .execute();
}

export const sameTeams = (a: string[], b: string[]) =>
  a.length === b.length && [...a].sort().every((t, i) => t === [...b].sort()[i]);

/** The members of one team of the account with their user record, oldest membership first. */
export function membersOfTeam(db: DashboardDb, accountId: string, teamId: string) {
  return db
    .selectFrom('dashboard.team_members as m')
    .innerJoin('dashboard.users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.email', 'u.display_name', 'u.role', 'm.created_at as added_at'])
    .where('m.account_id', '=', accountId)
    .where('m.team_id', '=', teamId)
    .orderBy('m.created_at')
    .orderBy('u.id')
    .execute();
}

/** When the user joined the team, or undefined when they are not a member. */
export async function joinedAt(db: DashboardDb, teamId: string, userId: string): Promise<Date | undefined> {
  const row = await db
    .selectFrom('dashboard.team_members')
    .select('created_at')
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.created_at;
}

/** Makes the user a member of the team (the caller checked they were not); returns when they joined. */
export async function addMembership(db: DashboardDb, accountId: string, teamId: string, userId: string) {
  const row = await db
    .insertInto('dashboard.team_members')
    .values({ team_id: teamId, user_id: userId, account_id: accountId })
    .returning('created_at')
    .executeTakeFirstOrThrow();
  return row.created_at;
}

export async function removeMembership(db: DashboardDb, teamId: string, userId: string) {
  await db
    .deleteFrom('dashboard.team_members')
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .execute();
}
