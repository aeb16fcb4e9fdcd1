import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams, type listAccountTeams, type TeamObject } from '@tollgate/contracts';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { PAGE_SIZE } from '../keys/keys.repository';
import { toTeamObject } from './team-view';
import type { TeamService } from './teams.service';

/** At most this many teams in one answer (pages of PAGE_SIZE read until then). */
const MAX_TEAMS = 5_000;

/** The dashboard's read of an account's teams (team members and team viewers are the dashboard's data). */
export function teamsInternalRoutes(deps: { teams: TeamService; verifier: ServiceVerifier }): Router {
  const router = Router();
  router.get(
    '/internal/accounts/:accountId/teams',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      const data: TeamObject[] = [];
      for (let offset = 0; offset < MAX_TEAMS; offset += PAGE_SIZE) {
        const page = await deps.teams.list(accountId, offset);
        data.push(...page.map(toTeamObject));
        if (page.length < PAGE_SIZE) break;
      }
      const answer: z.input<typeof listAccountTeams.response> = { data };
      res.json(answer);
    },
  );
  return router;
}
