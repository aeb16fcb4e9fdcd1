import type { ServiceVerifier } from '@tollgate/auth';
import {
  accountParams,
  createAccountTeam,
  type deleteAccountTeam,
  type listAccountTeams,
  type TeamObject,
  updateAccountTeam,
} from '@tollgate/contracts';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { dashboardActor } from '../http/caller';
import { PAGE_SIZE } from '../keys/keys.repository';
import { parseBody } from '../keys/keys.schemas';
import { parseTeamId, teamInput, toTeamObject } from './team-view';
import type { TeamService } from './teams.service';

/** At most this many teams in one answer (pages of PAGE_SIZE read until then). */
const MAX_TEAMS = 5_000;

/**
 * The dashboard's teams: its read of an account's teams (team members and team viewers are the
 * dashboard's data) and an owner's changes (the same service as `/teams`, audited for the user the
 * dashboard names).
 */
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
  const dashboard = serviceCaller(deps.verifier, ['dashboard']);
  router.post('/internal/accounts/:accountId/teams', dashboard, async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseBody(createAccountTeam.request, req.body);
    const team = await deps.teams.create(
      accountId,
      { ...teamInput(body), name: body.name },
      dashboardActor(req),
    );
    const answer: z.input<typeof createAccountTeam.response> = { data: toTeamObject(team) };
    res.status(201).json(answer);
  });
  router.patch('/internal/accounts/:accountId/teams/:id', dashboard, async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseBody(updateAccountTeam.request, req.body);
    const team = await deps.teams.update(
      accountId,
      parseTeamId(req.params.id),
      { ...teamInput(body), name: body.name },
      dashboardActor(req),
    );
    const answer: z.input<typeof updateAccountTeam.response> = { data: toTeamObject(team) };
    res.json(answer);
  });
  router.delete('/internal/accounts/:accountId/teams/:id', dashboard, async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const id = parseTeamId(req.params.id);
    await deps.teams.remove(accountId, id, dashboardActor(req));
    const answer: z.input<typeof deleteAccountTeam.response> = { data: { id, deleted: true } };
    res.json(answer);
  });
  return router;
}
