import type { ServiceVerifier } from '@tollgate/auth';
import {
  addTeamMember,
  isCanonicalUuid,
  type listTeamMembers,
  type removeTeamMember,
  teamMemberParams,
  teamMembersParams,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { ACTOR_KEY_HEADER, forwardedClientAddress, parseInput, serviceCaller } from '@tollgate/http';
import { type Request, Router } from 'express';
import type { z } from 'zod';
import type { ManagementKeyActor } from '../users/users-audit';
import type { TeamMembersService } from './team-members.service';

/** The management key a keys-service call acts for (service token checked first), and its client's address. */
function managementKeyActor(req: Request): ManagementKeyActor {
  const key = req.headers[ACTOR_KEY_HEADER];
  if (!isCanonicalUuid(key)) {
    throw badRequest(`${ACTOR_KEY_HEADER}: the management key acting (a uuid) is required`);
  }
  return { managementKeyId: key, address: forwardedClientAddress(req) };
}

/** The account and team of a member route (lowercase, as Postgres prints them). */
const teamOf = (req: Request) => {
  const p = parseInput(teamMembersParams, req.params);
  return { accountId: p.accountId.toLowerCase(), teamId: p.teamId.toLowerCase() };
};

/**
 * The keys service's reads and changes of a team's members (the management API's
 * `/teams/{id}/members`; contracts `listTeamMembers`, `addTeamMember`, `removeTeamMember`): the
 * keys service has checked that the team is the account's; users and memberships are this service's.
 */
export function teamMembersRoutes(deps: { members: TeamMembersService; verifier: ServiceVerifier }): Router {
  const router = Router();
  const keys = serviceCaller(deps.verifier, ['keys']);
  const path = '/internal/accounts/:accountId/teams/:teamId/members';

  router.get(path, keys, async (req, res) => {
    const { accountId, teamId } = teamOf(req);
    const answer: z.input<typeof listTeamMembers.response> = {
      data: await deps.members.list(accountId, teamId),
    };
    res.json(answer);
  });

  router.post(path, keys, async (req, res) => {
    const { accountId, teamId } = teamOf(req);
    const body = parseInput(addTeamMember.request, req.body);
    const { member, added } = await deps.members.add(accountId, teamId, body, managementKeyActor(req));
    const answer: z.input<typeof addTeamMember.response> = { data: member, added };
    res.json(answer);
  });

  router.delete(`${path}/:userId`, keys, async (req, res) => {
    const { accountId, teamId, userId } = parseInput(teamMemberParams, req.params);
    const actor = managementKeyActor(req);
    await deps.members.remove(accountId.toLowerCase(), teamId.toLowerCase(), userId, actor);
    const answer: z.input<typeof removeTeamMember.response> = {
      data: { id: userId.toLowerCase(), deleted: true },
    };
    res.json(answer);
  });

  return router;
}
