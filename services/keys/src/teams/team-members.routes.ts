import type { ServiceVerifier } from '@tollgate/auth';
import { addTeamMemberBody, isUuid } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { Router } from 'express';
import { callerOf, keyCaller, managementActor } from '../http/caller';
import { parseBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';
import type { TeamMembers } from './team-members.client';
import { parseTeamId } from './team-view';
import type { TeamService } from './teams.service';

function parseUserId(value: unknown): string {
  if (!isUuid(value)) throw badRequest('user_id: must be a dashboard user id (uuid)', { field: 'user_id' });
  return value.toLowerCase();
}

/**
 * `/teams/{id}/members` of the management API (issue 29): the dashboard users of a team of the
 * caller's account. The team is checked here (another account's, or none: 404); the members are the
 * dashboard's (`TeamMembers`), which audits each change as `user.teams` by the management key.
 */
export function teamMembersRoutes(deps: {
  keys: KeyService;
  teams: TeamService;
  members: TeamMembers;
  verifier: ServiceVerifier;
}): Router {
  const { teams, members } = deps;
  const management = keyCaller(deps, 'management');
  const router = Router();

  router.get('/teams/:id/members', management, async (req, res) => {
    const accountId = callerOf(res).account_id;
    const id = parseTeamId(req.params.id);
    await teams.get(accountId, id);
    res.json({ data: await members.list(accountId, id) });
  });

  router.post('/teams/:id/members', management, async (req, res) => {
    const accountId = callerOf(res).account_id;
    const id = parseTeamId(req.params.id);
    const body = parseBody(addTeamMemberBody, req.body);
    await teams.get(accountId, id);
    const { data, added } = await members.add(accountId, id, body, managementActor(req, res));
    res.status(added ? 201 : 200).json({ data });
  });

  router.delete('/teams/:id/members/:userId', management, async (req, res) => {
    const accountId = callerOf(res).account_id;
    const id = parseTeamId(req.params.id);
    const userId = parseUserId(req.params.userId);
    await teams.get(accountId, id);
    await members.remove(accountId, id, userId, managementActor(req, res));
    res.json({ data: { id: userId, deleted: true } });
  });

  return router;
}
