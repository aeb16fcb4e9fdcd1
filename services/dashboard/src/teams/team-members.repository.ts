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
