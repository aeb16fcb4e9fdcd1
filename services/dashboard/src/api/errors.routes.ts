import type { AccountErrorsQuery, ListAccountRefusalsQuery } from '@tollgate/contracts';
import { Router } from 'express';
import { requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';
import { plainQuery } from './query';

/**
 * Errors and refusals as data (issue 28): the error rate and refusals by type per bucket or key,
 * the last refusals (per key), and one refusal by the id the refused request answered with. Billing
 * validates the relayed queries (its 400 names the parameter).
 */
export function errorsRoutes(deps: { client: InternalClient }): Router {
  const { client } = deps;
  const router = Router();

  router.get('/api/errors', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, [
      'from',
      'to',
      'granularity',
      'group_by',
      'key_id',
    ]);
    res.json({ data: await client.errors(userOf(res).accountId, query as AccountErrorsQuery) });
  });

  router.get('/api/refusals', requireUser, async (req, res) => {
    const query = plainQuery(req.query as Record<string, unknown>, ['key_id', 'limit']);
    res.json({ data: await client.refusals(userOf(res).accountId, query as ListAccountRefusalsQuery) });
  });

  router.get('/api/refusals/:id', requireUser, async (req, res) => {
    res.json({ data: await client.refusal(userOf(res).accountId, String(req.params.id)) });
  });

  return router;
}
