import { type Kysely, sql } from 'kysely';
import type { Database } from '../database';
import type { Team } from './teams.table';

type Db = Kysely<Database>;

/** A team with the number of its keys that are not revoked. */
export type TeamWithKeys = Team & { key_count: number };

const PAGE_SIZE = 100;

function withKeyCount(db: Db) {
  return db
    .selectFrom('keys.teams as t')
    .selectAll('t')
    .select((eb) =>
      eb
        .selectFrom('keys.api_keys as k')
        .whereRef('k.team_id', '=', 't.id')
        .where('k.revoked', '=', false)
        .select(sql<number>`count(*)::int`.as('n'))
        .as('key_count'),
    );
}

/** A team's budget settings: what the key-cache records of its keys carry (the proxy decides on them). */
export type TeamLimits = Pick<Team, 'limit' | 'limit_reset' | 'rate_limit_tpm'>;

/** What a team's create and update set besides its name. */
export type TeamSettings = Partial<TeamLimits> & { name?: string };

export async function insertTeam(
  db: Db,
  accountId: string,
  input: TeamSettings & { name: string },
): Promise<Team> {
  return db
    .insertInto('keys.teams')
    .values({
      account_id: accountId,
      name: input.name,
      limit: input.limit ?? null,
      limit_reset: input.limit_reset ?? null,
      rate_limit_tpm: input.rate_limit_tpm ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findTeam(db: Db, accountId: string, id: string): Promise<TeamWithKeys | undefined> {
  const row = await withKeyCount(db)
    .where('t.id', '=', id)
    .where('t.account_id', '=', accountId)
    .executeTakeFirst();
  return row ? { ...row, key_count: Number(row.key_count ?? 0) } : undefined;
}

/** The team row locked until the transaction ends (a key joining it, or its deletion, waits). */
export async function lockTeam(db: Db, accountId: string, id: string): Promise<Team | undefined> {
  return db
    .selectFrom('keys.teams')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
}

/** Oldest first. */
export async function listTeams(db: Db, accountId: string, offset: number): Promise<TeamWithKeys[]> {
  const rows = await withKeyCount(db)
    .where('t.account_id', '=', accountId)
    .orderBy('t.created_at')
    .orderBy('t.id')
    .offset(offset)
    .limit(PAGE_SIZE)
    .execute();
  return rows.map((r) => ({ ...r, key_count: Number(r.key_count ?? 0) }));
}

export async function updateTeam(db: Db, id: string, changes: TeamSettings): Promise<Team> {
  return db
    .updateTable('keys.teams')
    .set({ ...changes, updated_at: sql<Date>`clock_timestamp()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The budget settings of a key's team (the key-cache record carries them), or undefined. */
export async function findTeamLimits(db: Db, id: string): Promise<TeamLimits | undefined> {
  return db
    .selectFrom('keys.teams')
    .select(['limit', 'limit_reset', 'rate_limit_tpm'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Deletes the team; its revoked keys leave it (a live key in it blocks the deletion: the caller checks). */
export async function deleteTeam(db: Db, id: string): Promise<void> {
  await db
    .updateTable('keys.api_keys')
    .set({ team_id: null })
    .where('team_id', '=', id)
    .where('revoked', '=', true)
    .execute();
  await db.deleteFrom('keys.teams').where('id', '=', id).execute();
}

export async function countLiveKeys(db: Db, teamId: string): Promise<number> {
  const row = await db
    .selectFrom('keys.api_keys')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('team_id', '=', teamId)
    .where('revoked', '=', false)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
