import type { ServiceVerifier } from '@tollgate/auth';
import { createTeamBody, updateTeamBody } from '@tollgate/contracts';
import { Router } from 'express';
import { callerOf, keyCaller, managementActor } from '../http/caller';
import { parseBody, parseListQuery } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';
import { parseTeamId, teamInput, toTeamObject } from './team-view';
import type { TeamService } from './teams.service';

/** `/teams` of the management API (issue 29), as forwarded by the proxy: management keys, the caller's account only. */
export function teamsRoutes(deps: {
  keys: KeyService;
  teams: TeamService;
  verifier: ServiceVerifier;
}): Router {
  const { teams } = deps;
  const management = keyCaller(deps, 'management');
  const router = Router();

  router.post('/teams', management, async (req, res) => {
    const body = parseBody(createTeamBody, req.body);
    const team = await teams.create(
      callerOf(res).account_id,
      { ...teamInput(body), name: body.name },
      managementActor(req, res),
    );
    res.status(201).json({ data: toTeamObject(team) });
  });

  router.get('/teams', management, async (req, res) => {
    const { offset } = parseListQuery(req.query as Record<string, unknown>);
    const rows = await teams.list(callerOf(res).account_id, offset);
    res.json({ data: rows.map(toTeamObject) });
  });

  router.get('/teams/:id', management, async (req, res) => {
    const team = await teams.get(callerOf(res).account_id, parseTeamId(req.params.id));
    res.json({ data: toTeamObject(team) });
  });

  router.patch('/teams/:id', management, async (req, res) => {
    const id = parseTeamId(req.params.id);
    const body = parseBody(updateTeamBody, req.body);
    const team = await teams.update(
      callerOf(res).account_id,
      id,
      { ...teamInput(body), name: body.name },
      managementActor(req, res),
    );
    res.json({ data: toTeamObject(team) });
  });

  router.delete('/teams/:id', management, async (req, res) => {
    const id = parseTeamId(req.params.id);
    await teams.remove(callerOf(res).account_id, id, managementActor(req, res));
    res.json({ data: { id, deleted: true } });
  });

  return router;
}
