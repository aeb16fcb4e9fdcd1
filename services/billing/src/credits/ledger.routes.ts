import type { ServiceVerifier } from '@tollgate/auth';
import { parseInput } from '@tollgate/http';
import { toDecimal } from '@tollgate/money';
import { Router } from 'express';
import { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, decimalOf, limitParam, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';
import { listLedger } from './credits.repository';
import type { CreditsService } from './credits.service';

const ledgerQuery = z.strictObject({
  limit: limitParam(50, 200),
  before: z.string().uuid('expected a ledger entry id (uuid)').optional(),
});

/** The dashboard's credits page: balance (exact decimals) and the ledger, newest first. */
export function ledgerRoutes(deps: {
  db: BillingDb;
  credits: CreditsService;
  verifier: ServiceVerifier;
}): Router {
  const router = Router();
  router.get(
    '/internal/accounts/:accountId/credits',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const accountId = accountIdOf(req);
      const q = parseInput(ledgerQuery, singleQuery(req));
      const [balance, rows] = await Promise.all([
        deps.credits.balance(accountId),
        listLedger(deps.db, { accountId, limit: q.limit + 1, before: q.before }),
      ]);
      const page = rows.slice(0, q.limit);
      res.json({
        data: {
          total_credits: toDecimal(balance.totalCredits),
          total_usage: toDecimal(balance.totalUsage),
          remaining: toDecimal(balance.totalCredits - balance.totalUsage),
          ledger: page.map((r) => ({
            id: r.id,
            amount: decimalOf(r.amount),
            note: r.note,
            created_at: r.created_at.toISOString(),
          })),
          next_before: rows.length > q.limit ? (page.at(-1)?.id ?? null) : null,
        },
      });
    },
  );
  return router;
}
