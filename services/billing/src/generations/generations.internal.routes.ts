import type { ServiceVerifier } from '@tollgate/auth';
import {
  GENERATIONS_MAX_OFFSET,
  getAccountGeneration,
  listAccountGenerations,
  listAccountSessions,
} from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, decimalOf, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';
import { findBodies } from './bodies';
import {
  findGeneration,
  listGenerations,
  listSessions,
  missingGenerationMessage,
} from './generations.repository';
import { generationView } from './generations.routes';
import type { Generation } from './generations.table';

type AccountGeneration = z.input<typeof listAccountGenerations.response>['data'][number];

/** The record for the dashboard: the public view plus key, upstream model, error and exact cost. */
const internalView = (g: Generation): AccountGeneration => ({
  ...generationView(g),
  key_id: g.key_id,
  upstream_model: g.upstream_model,
  finished_at: g.finished_at.toISOString(),
  error: g.error,
  cost: decimalOf(g.total_cost),
});

/** The dashboard's reads of one account's generation records (service token, account in the path). */
export function generationsInternalRoutes(deps: {
  db: BillingDb;
  verifier: ServiceVerifier;
  retentionCutoff: () => Date | null;
}): Router {
  const router = Router();

  router.get(
    '/internal/accounts/:accountId/generations',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(listAccountGenerations.query, singleQuery(req));
      const keyset = (q.sort ?? 'created_at') === 'created_at' && (q.order ?? 'desc') === 'desc';
      const byOffset = !keyset || q.offset !== undefined;
      const offset = q.offset ?? 0;
      const rows = await listGenerations(deps.db, {
        accountId,
        limit: q.limit + 1,
        before: q.before,
        offset: byOffset ? offset : undefined,
        sort: q.sort,
        order: q.order,
        filters: {
          model: q.model,
          app: q.app,
          keyId: q.key_id,
          provider: q.provider,
          usageSource: q.usage_source,
          sessionId: q.session_id,
          modelPrefix: q.model_prefix,
          appPrefix: q.app_prefix,
          idPrefix: q.id_prefix,
          from: q.from,
          to: q.to,
        },
      });
      const page = rows.slice(0, q.limit);
      const more = rows.length > q.limit;
      const answer: z.input<typeof listAccountGenerations.response> = {
        data: page.map(internalView),
        next_before: !byOffset && more ? (page.at(-1)?.id ?? null) : null,
        ...(byOffset
          ? { next_offset: more && offset + q.limit <= GENERATIONS_MAX_OFFSET ? offset + q.limit : null }
          : {}),
      };
      res.json(answer);
    },
  );

  router.get(
    '/internal/accounts/:accountId/sessions',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(listAccountSessions.query, singleQuery(req));
      const rows = await listSessions(deps.db, {
        accountId,
        from: q.from,
        to: q.to,
        limit: q.limit + 1,
        offset: q.offset,
      });
      const answer: z.input<typeof listAccountSessions.response> = {
        data: rows.slice(0, q.limit).map((r) => ({
          session_id: r.session_id,
          requests: Number(r.requests),
          cost: decimalOf(r.cost),
          tokens_prompt: Number(r.tokens_prompt),
          tokens_completion: Number(r.tokens_completion),
          first_at: r.first_at.toISOString(),
          last_at: r.last_at.toISOString(),
          models: r.models,
        })),
        next_offset: rows.length > q.limit ? q.offset + q.limit : null,
      };
      res.json(answer);
    },
  );

  router.get(
    '/internal/accounts/:accountId/generations/:id',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const { id } = parseInput(getAccountGeneration.params, { id: req.params.id });
      const row = await findGeneration(deps.db, id);
      if (!row || row.account_id !== accountId)
        throw notFound(missingGenerationMessage(id, deps.retentionCutoff()));
      const bodies = await findBodies(deps.db, accountId, row.id);
      const answer: z.input<typeof getAccountGeneration.response> = {
        data: { ...internalView(row), bodies },
      };
      res.json(answer);
    },
  );

  return router;
}
