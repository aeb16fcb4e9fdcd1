import { AppError, notFound } from '@tollgate/errors';
import type { KeysDb } from '../database';
import {
  countLiveKeys,
  deleteTeam,
  findTeam,
  insertTeam,
  listTeams,
  lockTeam,
  renameTeam,
  type TeamWithKeys,
} from './teams.repository';

/** Teams of an account (issue 29). Every call is scoped to the caller's account: another account's team is 404. */
export interface TeamService {
  create(accountId: string, input: { name: string }): Promise<TeamWithKeys>;
  get(accountId: string, id: string): Promise<TeamWithKeys>;
  list(accountId: string, offset: number): Promise<TeamWithKeys[]>;
  update(accountId: string, id: string, input: { name?: string }): Promise<TeamWithKeys>;
  /** 409 while keys that are not revoked belong to it (move or revoke them first). */
  remove(accountId: string, id: string): Promise<void>;
}

const teamNotFound = () => notFound('No such team');

export function createTeamService(db: KeysDb): TeamService {
  const get = async (accountId: string, id: string) => {
    const team = await findTeam(db, accountId, id);
    if (!team) throw teamNotFound();
    return team;
  };
  return {
    get,
    async create(accountId, input) {
      const row = await insertTeam(db, accountId, input.name);
      return { ...row, key_count: 0 };
    },
    list: (accountId, offset) => listTeams(db, accountId, offset),
    async update(accountId, id, input) {
      await db.transaction().execute(async (trx) => {
        const current = await lockTeam(trx, accountId, id);
        if (!current) throw teamNotFound();
        if (input.name !== undefined && input.name !== current.name) await renameTeam(trx, id, input.name);
      });
      return get(accountId, id);
    },
    async remove(accountId, id) {
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
      });
    },
  };
}
