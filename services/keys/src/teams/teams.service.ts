import { AppError, notFound } from '@tollgate/errors';
import { type LimitReset, toUnits } from '@tollgate/money';
import { sql } from 'kysely';
import { ADMIN_CLI_ACTOR, type AuditActor, recordChange } from '../audit/audit';
import { applyKeysChange, type KeyChangeDeps } from '../cache/key-cache-sync';
import type { KeysDb } from '../database';
import {
  countLiveKeys,
  deleteTeam,
  findTeam,
  insertTeam,
  listTeams,
  lockTeam,
  type TeamSettings,
  type TeamWithKeys,
  updateTeam,
} from './teams.repository';
import type { Team } from './teams.table';

/** What create and update take (undefined = unchanged / none). `limit` is a USD decimal string. */
export interface TeamInput {
  name?: string;
  limit?: string | null;
  limitReset?: LimitReset | null;
  rateLimitTpm?: number | null;
}

/** Teams of an account (issue 29). Every call is scoped to the caller's account: another account's team is 404. */
export interface TeamService {
  /** `actor` (create, update, remove): written to the audit log in the change's transaction; omitted = the admin CLI. */
  create(accountId: string, input: TeamInput & { name: string }, actor?: AuditActor): Promise<TeamWithKeys>;
  get(accountId: string, id: string): Promise<TeamWithKeys>;
  list(accountId: string, offset: number): Promise<TeamWithKeys[]>;
  /**
   * A change of the limit, its reset or the tokens-per-minute limit reaches the key-cache record of
   * every key of the team before this resolves (the proxy decides on them at the next request).
   */
  update(accountId: string, id: string, input: TeamInput, actor?: AuditActor): Promise<TeamWithKeys>;
  /** 409 while keys that are not revoked belong to it (move or revoke them first). */
  remove(accountId: string, id: string, actor?: AuditActor): Promise<void>;
}

const teamSnapshot = (t: Pick<Team, 'name' | 'limit' | 'limit_reset' | 'rate_limit_tpm'>) => ({
  name: t.name,
  limit: t.limit === null ? null : t.limit.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, ''),
  limit_reset: t.limit_reset,
  rate_limit_tpm: t.rate_limit_tpm,
});
const teamNotFound = () => notFound('No such team');

function sameDecimal(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  return toUnits(a) === toUnits(b);
}

/** The columns `input` changes on `current` (empty = nothing to do). */
function teamChanges(current: Team, input: TeamInput): TeamSettings {
  const changes: TeamSettings = {};
  if (input.name !== undefined && input.name !== current.name) changes.name = input.name;
  if (input.limit !== undefined && !sameDecimal(input.limit, current.limit)) changes.limit = input.limit;
  if (input.limitReset !== undefined && input.limitReset !== current.limit_reset)
    changes.limit_reset = input.limitReset;
  if (input.rateLimitTpm !== undefined && input.rateLimitTpm !== current.rate_limit_tpm)
    changes.rate_limit_tpm = input.rateLimitTpm;
  return changes;
}

export function createTeamService(deps: KeyChangeDeps): TeamService {
  const { db } = deps;
  const get = async (accountId: string, id: string) => {
    const team = await findTeam(db, accountId, id);
    if (!team) throw teamNotFound();
    return team;
  };
  return {
    get,
    async create(accountId, input, actor = ADMIN_CLI_ACTOR) {
      const row = await db.transaction().execute(async (trx) => {
        const team = await insertTeam(trx, accountId, {
          name: input.name,
          limit: input.limit ?? null,
          limit_reset: input.limitReset ?? null,
          rate_limit_tpm: input.rateLimitTpm ?? null,
        });
        await recordChange(trx, actor, {
          accountId,
          action: 'team.create',
          target: { kind: 'team', id: team.id },
          before: null,
          after: teamSnapshot(team),
        });
        return team;
      });
      return { ...row, key_count: 0 };
    },
    list: (accountId, offset) => listTeams(db, accountId, offset),
    async update(accountId, id, input, actor = ADMIN_CLI_ACTOR) {
      await applyKeysChange(deps, async (trx) => {
        const current = await lockTeam(trx, accountId, id);
        if (!current) throw teamNotFound();
        const changes = teamChanges(current, input);
        if (Object.keys(changes).length === 0) return { result: current, keys: [] };
        const updated = await updateTeam(trx, id, changes);
        await recordChange(trx, actor, {
          accountId,
          action: 'team.update',
          target: { kind: 'team', id },
          before: teamSnapshot(current),
          after: teamSnapshot(updated),
        });
        // A rename changes no key record; a budget change reaches every key of the team.
        const budget =
          changes.limit !== undefined ||
          changes.limit_reset !== undefined ||
          changes.rate_limit_tpm !== undefined;
        return { result: updated, keys: budget ? await bumpTeamKeys(trx, id) : [] };
      });
      return get(accountId, id);
    },
    async remove(accountId, id, actor = ADMIN_CLI_ACTOR) {
      await db.transaction().execute(async (trx) => {
        const current = await lockTeam(trx, accountId, id);
        if (!current) throw teamNotFound();
        const live = await countLiveKeys(trx, id);
        if (live > 0) {
          throw new AppError(
            'conflict',
            `This team still has ${live} key(s); move them to another team (PATCH /keys/{hash} with team_id) or revoke them first`,
          );
        }
        await deleteTeam(trx, id);
        await recordChange(trx, actor, {
          accountId,
          action: 'team.delete',
          target: { kind: 'team', id },
          before: teamSnapshot(current),
          after: null,
        });
      });
    },
  };
}

/** Every key of the team that is not revoked gets a new version (its cached record changes). */
function bumpTeamKeys(trx: KeysDb, teamId: string) {
  return trx
    .updateTable('keys.api_keys')
    .set({ version: sql<number>`version + 1` })
    .where('team_id', '=', teamId)
    .where('revoked', '=', false)
    .returningAll()
    .execute();
}
