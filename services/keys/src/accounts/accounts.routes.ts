import type { ServiceVerifier } from '@tollgate/auth';
import { type AccountObject, updateAccountBody } from '@tollgate/contracts';
import { Router } from 'express';
import { callerOf, keyCaller, managementActor } from '../http/caller';
import { parseBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';
import type { AccountService } from './accounts.service';
import type { Account } from './accounts.table';

export const toAccountObject = (a: Account): AccountObject => ({
  id: a.id,
  slug: a.slug,
  name: a.name,
  store_bodies: a.store_bodies,
});

/**
 * `/account` of the management API, as forwarded by the proxy: the caller's account and its settings
 * (`store_bodies`, issue 28). A change is audited as `account.update` and reaches every key's cached
 * record before the answer.
 */
export function accountsRoutes(deps: {
  keys: KeyService;
  accounts: AccountService;
  verifier: ServiceVerifier;
}): Router {
  const management = keyCaller(deps, 'management');
  const router = Router();
  router.get('/account', management, async (_req, res) => {
    res.json({ data: toAccountObject(await deps.accounts.requireById(callerOf(res).account_id)) });
  });
  router.patch('/account', management, async (req, res) => {
    const body = parseBody(updateAccountBody, req.body);
    const account = await deps.accounts.update(
      callerOf(res).account_id,
      { storeBodies: body.store_bodies },
      managementActor(req, res),
    );
    res.json({ data: toAccountObject(account) });
  });
  return router;
}
