import type { AccountErrorsQuery, ListAccountRefusalsQuery } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { Router } from 'express';
import { requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';

/** Query strings as single strings of the allowed names; a repeated or unknown parameter is a 400. */
function plainQuery(query: Record<string, unknown>, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (!allowed.includes(k)) throw badRequest(`${k}: unknown parameter`);
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`);
    out[k] = v;
  }
  return out;
}

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
