import { AppError, notFound } from '@tollgate/errors';
import { ADMIN_CLI_ACTOR, type AuditActor, recordChange } from '../audit/audit';
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
  /** `actor` (create, update, remove): written to the audit log in the change's transaction; omitted = the admin CLI. */
  create(accountId: string, input: { name: string }, actor?: AuditActor): Promise<TeamWithKeys>;
  get(accountId: string, id: string): Promise<TeamWithKeys>;
  list(accountId: string, offset: number): Promise<TeamWithKeys[]>;
  update(accountId: string, id: string, input: { name?: string }, actor?: AuditActor): Promise<TeamWithKeys>;
  /** 409 while keys that are not revoked belong to it (move or revoke them first). */
  remove(accountId: string, id: string, actor?: AuditActor): Promise<void>;
}

const teamSnapshot = (t: { name: string }) => ({ name: t.name });

const teamNotFound = () => notFound('No such team');

export function createTeamService(db: KeysDb): TeamService {
  const get = async (accountId: string, id: string) => {
    const team = await findTeam(db, accountId, id);
    if (!team) throw teamNotFound();
    return team;
  };
  return {
    get,
    async create(accountId, input, actor = ADMIN_CLI_ACTOR) {
      const row = await db.transaction().execute(async (trx) => {
        const team = await insertTeam(trx, accountId, input.name);
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
      await db.transaction().execute(async (trx) => {
        const current = await lockTeam(trx, accountId, id);
        if (!current) throw teamNotFound();
        if (input.name !== undefined && input.name !== current.name) {
          await renameTeam(trx, id, input.name);
          await recordChange(trx, actor, {
            accountId,
            action: 'team.update',
            target: { kind: 'team', id },
            before: teamSnapshot(current),
            after: teamSnapshot({ name: input.name }),
          });
        }
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
