import type { ServiceVerifier } from '@tollgate/auth';
import { keysUsage, spendRebuild, teamsUsage } from '@tollgate/contracts';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { serviceCaller } from '../http/caller';
import type { SpendService } from './spend.service';

export function spendRoutes(deps: {
  spend: SpendService;
  verifier: ServiceVerifier;
  clock: () => Date;
}): Router {
  const router = Router();

  /** Usage figures for key objects (keys service). */
  router.post(keysUsage.path, serviceCaller(deps.verifier, ['keys']), async (req, res) => {
    const body = parseInput(keysUsage.request, req.body);
    const data = await deps.spend.usageOf(
      'key',
      body.keys.map((k) => ({ id: k.id, limitReset: k.limit_reset ?? null })),
    );
    const answer: z.input<typeof keysUsage.response> = { data };
    res.json(answer);
  });

  /** Team spend for the dashboard's Teams page (a team's limit, what is left of it). */
  router.post(teamsUsage.path, serviceCaller(deps.verifier, ['dashboard']), async (req, res) => {
    const body = parseInput(teamsUsage.request, req.body);
    const data = await deps.spend.usageOf(
      'team',
      body.teams.map((t) => ({ id: t.id, limitReset: t.limit_reset ?? null })),
    );
    const answer: z.input<typeof teamsUsage.response> = { data };
    res.json(answer);
  });

  /** The spend guard found a counter missing in Redis: load it from Postgres. */
  router.post(spendRebuild.path, serviceCaller(deps.verifier, ['proxy']), async (req, res) => {
    const body = parseInput(spendRebuild.request, req.body);
    await deps.spend.rebuild(
      { accountId: body.account_id, keyId: body.key_id ?? null, teamId: body.team_id ?? null },
      body.at ? new Date(body.at) : deps.clock(),
    );
    const answer: z.input<typeof spendRebuild.response> = { data: { rebuilt: true } };
    res.json(answer);
  });

  return router;
}
