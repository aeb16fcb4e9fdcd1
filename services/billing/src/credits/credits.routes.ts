import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams, grantCredits, setPostpaid } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseInput } from '@tollgate/http';
import { MoneyError, toNumber, toUnits } from '@tollgate/money';
import { Router } from 'express';
import type { z } from 'zod';
import { keyCallerRead, serviceCaller } from '../http/caller';
import type { KeyOwners } from '../keys/key-owners';
import type { CreditsService } from './credits.service';

const MAX_GRANT = 10n ** 9n * 10n ** 10n; // 1e9 USD in units

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

/**
 * Who may grant credits or set the postpaid flag: the operator's CLI only (`admin`). The proxy, keys
 * and the dashboard have no flow that moves money, so a leaked key of theirs cannot either.
 */
const CREDIT_WRITERS = ['admin'] as const;

export function creditsRoutes(deps: {
  credits: CreditsService;
  verifier: ServiceVerifier;
  owners: KeyOwners;
}): Router {
  const router = Router();

  /** GET /credits (both scopes): the caller's account. */
  router.get(
    '/credits',
    keyCallerRead(
      deps,
      'any',
      (_req, caller) => deps.credits.balance(caller.accountId),
      (res, b) => {
        res.json({ data: { total_credits: toNumber(b.totalCredits), total_usage: toNumber(b.totalUsage) } });
      },
    ),
  );

  router.post(
    '/internal/accounts/:accountId/credits',
    serviceCaller(deps.verifier, CREDIT_WRITERS),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      const body = parseInput(grantCredits.request, req.body);
      const result = await deps.credits.addCredits(accountId, amountUnits(body.amount), body.note ?? null);
      const answer: z.input<typeof grantCredits.response> = {
        data: { account_id: accountId, total_credits: result.totalCredits },
      };
      res.status(201).json(answer);
    },
  );

  router.put(
    '/internal/accounts/:accountId/postpaid',
    serviceCaller(deps.verifier, CREDIT_WRITERS),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      const body = parseInput(setPostpaid.request, req.body);
      const result = await deps.credits.setPostpaid(accountId, body.postpaid);
      const answer: z.input<typeof setPostpaid.response> = {
        data: { account_id: accountId, postpaid: result.postpaid },
      };
      res.json(answer);
    },
  );

  return router;
}
