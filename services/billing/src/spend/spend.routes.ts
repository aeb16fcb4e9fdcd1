import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import { z } from 'zod';
import { serviceCaller } from '../http/caller';
import type { SpendService } from './spend.service';

const usageBody = z.object({
  keys: z
    .array(
      z.object({
        id: z.string().uuid('expected a key id (uuid)'),
        limit_reset: z.enum(['daily', 'weekly', 'monthly']).nullable().optional(),
      }),
    )
    .max(1000, 'at most 1000 keys per call'),
});

const rebuildBody = z.object({
  account_id: z.string().uuid('expected an account id (uuid)'),
  key_id: z.string().uuid('expected a key id (uuid)').nullable().optional(),
  /** The guard's clock: which periods are current. Defaults to billing's clock. */
  at: z.string().datetime().optional(),
});

export function spendRoutes(deps: { spend: SpendService; secret: string; clock: () => Date }): Router {
  const router = Router();

  /** Usage figures for key objects (keys service). */
  router.post('/internal/usage/keys', serviceCaller(deps.secret), async (req, res) => {
    const body = parseInput(usageBody, req.body);
    const data = await deps.spend.usageOfKeys(
      body.keys.map((k) => ({ id: k.id, limitReset: k.limit_reset ?? null })),
    );
    res.json({ data });
  });

  /** The spend guard found a counter missing in Redis: load it from Postgres. */
  router.post('/internal/spend/rebuild', serviceCaller(deps.secret), async (req, res) => {
    const body = parseInput(rebuildBody, req.body);
    await deps.spend.rebuild(
      { accountId: body.account_id, keyId: body.key_id ?? null },
      body.at ? new Date(body.at) : deps.clock(),
    );
    res.json({ data: { rebuilt: true } });
  });

  return router;
}
