import { badRequest } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { MoneyError, toNumber, toUnits } from '@tollgate/money';
import { Router } from 'express';
import { z } from 'zod';
import { callerOf, keyCaller, serviceCaller } from '../http/caller';
import type { CreditsService } from './credits.service';

const accountParams = z.object({ accountId: z.string().uuid('expected an account id (uuid)') });
const MAX_GRANT = 10n ** 9n * 10n ** 10n; // 1e9 USD in units

const creditBody = z.object({
  amount: z.union([z.string(), z.number()], { error: 'expected a decimal USD amount' }),
  note: z.string().max(500).nullable().optional(),
});
const postpaidBody = z.object({ postpaid: z.boolean({ error: 'expected a boolean' }) });

function amountUnits(value: string | number): bigint {
  let units: bigint;
  try {
    units = toUnits(value);
  } catch (err) {
    if (err instanceof MoneyError) throw badRequest(`amount: ${err.message}`);
    throw err;
  }
  if (units === 0n) throw badRequest('amount: must not be zero');
  if (units > MAX_GRANT || units < -MAX_GRANT) throw badRequest('amount: out of range');
  return units;
}

export function creditsRoutes(deps: { credits: CreditsService; secret: string }): Router {
  const router = Router();

  /** GET /credits (both scopes): the caller's account. */
  router.get('/credits', keyCaller(deps.secret, 'any'), async (_req, res) => {
    const b = await deps.credits.balance(callerOf(res).accountId);
    res.json({ data: { total_credits: toNumber(b.totalCredits), total_usage: toNumber(b.totalUsage) } });
  });

  router.post('/internal/accounts/:accountId/credits', serviceCaller(deps.secret), async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseInput(creditBody, req.body);
    const result = await deps.credits.addCredits(accountId, amountUnits(body.amount), body.note ?? null);
    res.status(201).json({ data: { account_id: accountId, total_credits: result.totalCredits } });
  });

  router.put('/internal/accounts/:accountId/postpaid', serviceCaller(deps.secret), async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseInput(postpaidBody, req.body);
    const result = await deps.credits.setPostpaid(accountId, body.postpaid);
    res.json({ data: { account_id: accountId, postpaid: result.postpaid } });
  });

  return router;
}
