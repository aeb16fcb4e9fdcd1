import type { ServiceVerifier } from '@tollgate/auth';
import { REQUEST_ID_PATTERN } from '@tollgate/auth';
import { notFound } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, decimalOf, limitParam, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';
import { findGeneration, listGenerations } from './generations.repository';
import { generationView } from './generations.routes';
import type { Generation } from './generations.table';

const requestId = z.string().regex(REQUEST_ID_PATTERN, 'expected a request id (gen-…)');

const listQuery = z.strictObject({
  limit: limitParam(50, 200),
  before: requestId.optional(),
  model: z.string().min(1).max(300).optional(),
  app: z.string().max(300).optional(),
  key_id: z.string().uuid('expected a key id (uuid)').optional(),
  provider: z.string().min(1).max(300).optional(),
  usage_source: z.enum(['provider', 'estimated'], { error: 'expected provider or estimated' }).optional(),
});

/** The record for the dashboard: the public view plus key, upstream model, error and exact cost. */
const internalView = (g: Generation) => ({
  ...generationView(g),
  key_id: g.key_id,
  upstream_model: g.upstream_model,
  finished_at: g.finished_at.toISOString(),
  error: g.error,
  cost: decimalOf(g.total_cost),
});

/** The dashboard's reads of one account's generation records (service token, account in the path). */
export function generationsInternalRoutes(deps: { db: BillingDb; verifier: ServiceVerifier }): Router {
  const router = Router();

  router.get(
    '/internal/accounts/:accountId/generations',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(listQuery, singleQuery(req));
      const rows = await listGenerations(deps.db, {
        accountId,
        limit: q.limit + 1,
        before: q.before,
        filters: {
          model: q.model,
          app: q.app,
          keyId: q.key_id,
          provider: q.provider,
          usageSource: q.usage_source,
        },
      });
      const page = rows.slice(0, q.limit);
      res.json({
        data: page.map(internalView),
        next_before: rows.length > q.limit ? (page.at(-1)?.id ?? null) : null,
      });
    },
  );

  router.get(
    '/internal/accounts/:accountId/generations/:id',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const id = parseInput(requestId, req.params.id);
      const row = await findGeneration(deps.db, id);
      if (!row || row.account_id !== accountId) throw notFound(`No generation with id ${id}`);
      res.json({ data: internalView(row) });
    },
  );

  return router;
}
