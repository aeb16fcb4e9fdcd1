import type { ServiceVerifier } from '@tollgate/auth';
import { keyOwners } from '@tollgate/contracts';
import { toDecimal, toUnits } from '@tollgate/money';
import { Router } from 'express';
import type { z } from 'zod';
import { serviceCaller } from '../http/caller';
import { parseBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';

/** A numeric column as a plain decimal string ("7.2500000000" → "7.25"). */
const decimal = (v: string | null) => (v === null ? null : toDecimal(toUnits(v)));

/**
 * `POST /internal/keys/owners` {ids}: the account, scope and state of each existing key. Billing's
 * checks (a usage event's key belongs to its account; a caller's key still works) ask here instead of
 * reading keys' tables. Callers: billing only.
 */
export function ownersRoutes(deps: { keys: KeyService; verifier: ServiceVerifier }): Router {
  const router = Router();
  router.post(keyOwners.path, serviceCaller(deps.verifier, ['billing']), async (req, res) => {
    const { ids } = parseBody(keyOwners.request, req.body);
    const rows = await deps.keys.owners([...new Set(ids)]);
    const answer: z.input<typeof keyOwners.response> = {
      data: rows.map((r) => ({
        id: r.id,
        accountId: r.account_id,
        scope: r.scope,
        disabled: r.disabled,
        revoked: r.revoked,
        expiresAt: r.expires_at?.toISOString() ?? null,
        limit: decimal(r.limit),
        limitReset: r.limit_reset,
        teamId: r.team_id,
        teamLimit: decimal(r.team_limit),
        teamLimitReset: r.team_limit_reset,
      })),
    };
    res.json(answer);
  });
  return router;
}
