import type { ServiceVerifier } from '@tollgate/auth';
import { accountCredits } from '@tollgate/contracts';
import { parseInput } from '@tollgate/http';
import { toDecimal } from '@tollgate/money';
import { Router } from 'express';
import type { z } from 'zod';
import type { BillingDb } from '../database';
import { accountIdOf, decimalOf, singleQuery } from '../http/account-params';
import { serviceCaller } from '../http/caller';
import { listLedger } from './credits.repository';
import type { CreditsService } from './credits.service';

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
      const q = parseInput(accountCredits.query, singleQuery(req));
      const [balance, rows] = await Promise.all([
        deps.credits.balance(accountId),
        listLedger(deps.db, { accountId, limit: q.limit + 1, before: q.before }),
      ]);
      const page = rows.slice(0, q.limit);
      const answer: z.input<typeof accountCredits.response> = {
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
      };
      res.json(answer);
    },
  );
  return router;
}
