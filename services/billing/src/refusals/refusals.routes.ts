import type { ServiceVerifier } from '@tollgate/auth';
import { accountErrors, getAccountRefusal, listAccountRefusals, refusalTypes } from '@tollgate/contracts';
import { notFound } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';
import {
  type ErrorsRow,
  queryErrors,
  type RefusalRecord,
  type RefusedRow,
  recentRefusals,
  refusalById,
} from './refusals.repository';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const floorTo = (d: Date, unit: number) => new Date(Math.floor(d.getTime() / unit) * unit);
const ceilTo = (d: Date, unit: number) => new Date(Math.ceil(d.getTime() / unit) * unit);

type ErrorsView = z.input<typeof accountErrors.response>['data']['rows'][number];

const refusalView = (r: RefusalRecord): z.input<typeof getAccountRefusal.response>['data'] => ({
  ...r,
  status: Number(r.status),
  created_at: r.created_at.toISOString(),
});

/** Answered requests and refusals merged per (bucket, group), with status classes and the error rate. */
function mergeErrors(answered: ErrorsRow[], refused: RefusedRow[]): ErrorsView[] {
  const rows = new Map<string, ErrorsView & { failed5xx: number }>();
  const rowOf = (bucket: Date | null, group: string | null) => {
    const k = `${bucket?.toISOString() ?? ''}|${group ?? ''}`;
    let row = rows.get(k);
    if (!row) {
      row = {
        bucket: bucket ? bucket.toISOString() : null,
        group,
        requests: 0,
        errors: 0,
        refused: Object.fromEntries(refusalTypes.map((t) => [t, 0])) as ErrorsView['refused'],
        status: { '2xx': 0, '4xx': 0, '5xx': 0 },
        error_rate: 0,
        failed5xx: 0,
      };
      rows.set(k, row);
    }
    return row;
  };
  for (const a of answered) {
    const row = rowOf(a.bucket, a.group);
    row.requests += Number(a.requests);
    row.errors += Number(a.errors);
  }
  for (const r of refused) {
    const row = rowOf(r.bucket, r.group);
    const n = Number(r.refused);
    row.refused[r.error_type] += n;
    if (Number(r.status_class) === 4) row.status['4xx'] += n;
    else row.status['5xx'] += n;
  }
  return [...rows.values()]
    .map(({ failed5xx: _, ...row }) => {
      const refusals = Object.values(row.refused).reduce((a, b) => a + b, 0);
      // A recorded request with an upstream error was answered with the provider's failure (5xx).
      row.status['2xx'] = row.requests - row.errors;
      row.status['5xx'] += row.errors;
      const answeredAll = row.requests + refusals;
      row.error_rate = answeredAll > 0 ? (row.errors + refusals) / answeredAll : 0;
      return row;
    })
    .sort(
      (a, b) =>
        (a.bucket ?? '').localeCompare(b.bucket ?? '') || (a.group ?? '').localeCompare(b.group ?? ''),
    );
}

/** Errors and refusals as data: the dashboard's internal reads (service token). */
export function refusalsRoutes(deps: { db: BillingDb; verifier: ServiceVerifier }): Router {
  const router = Router();
  const dashboardOnly = serviceCaller(deps.verifier, ['dashboard']);

  router.get('/internal/accounts/:accountId/errors', dashboardOnly, async (req, res) => {
    const accountId = accountIdOf(req);
    const q = parseInput(accountErrors.query, singleQuery(req));
    const unit = q.granularity === 'hour' ? HOUR_MS : q.granularity === 'day' ? DAY_MS : HOUR_MS;
    const from = floorTo(q.from, unit);
    const to = ceilTo(q.to, unit);
    const { answered, refused } = await queryErrors(deps.db, {
      accountId,
      from,
      to,
      granularity: q.granularity,
      groupBy: q.group_by,
      keyId: q.key_id,
    });
    const answer: z.input<typeof accountErrors.response> = {
      data: {
        from: from.toISOString(),
        to: to.toISOString(),
        granularity: q.granularity,
        group_by: q.group_by,
        rows: mergeErrors(answered, refused),
      },
    };
    res.json(answer);
  });

  router.get('/internal/accounts/:accountId/refusals', dashboardOnly, async (req, res) => {
    const accountId = accountIdOf(req);
    const q = parseInput(listAccountRefusals.query, singleQuery(req));
    const rows = await recentRefusals(deps.db, { accountId, keyId: q.key_id, limit: q.limit });
    const answer: z.input<typeof listAccountRefusals.response> = { data: rows.map(refusalView) };
    res.json(answer);
  });

  router.get('/internal/accounts/:accountId/refusals/:id', dashboardOnly, async (req, res) => {
    const accountId = accountIdOf(req);
    const { id } = parseInput(getAccountRefusal.params, { id: req.params.id });
    const row = await refusalById(deps.db, accountId, id);
    if (!row) throw notFound(`No refusal with id ${id}`);
    const answer: z.input<typeof getAccountRefusal.response> = { data: refusalView(row) };
    res.json(answer);
  });

  return router;
}
