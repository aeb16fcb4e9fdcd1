import type { ServiceVerifier } from '@tollgate/auth';
import {
  accountParams,
  createAccountKey,
  type getAccount,
  listAccountKeys,
  type revokeAccountKey,
  updateAccount,
  updateAccountKey,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseId, parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { z } from 'zod';
import { toAccountObject } from '../accounts/accounts.routes';
import type { AccountService } from '../accounts/accounts.service';
import { dashboardActor } from '../http/caller';
import type { KeyPresenter } from '../keys/key-view';
import { PAGE_SIZE } from '../keys/keys.repository';
import { governanceOf, parseBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';

/** Query strings arrive as string | string[] | object: a repeated parameter is a 400, not a crash. */
function singleQuery(query: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`, { field: k });
    out[k] = v;
  }
  return out;
}

/**
 * The dashboard's key management (service token; the account is named in the path, the dashboard
 * checked the signed-in user belongs to it). Unlike the public API it sees both scopes, creates a
 * management key when asked (the only way besides the admin CLI), and revokes any key including
 * management keys. Requests and answers: the contracts of `@tollgate/contracts` (keys.ts).
 */
export function accountKeysRoutes(deps: {
  keys: KeyService;
  accounts: AccountService;
  presenter: KeyPresenter;
  verifier: ServiceVerifier;
}): Router {
  const { keys, accounts, presenter } = deps;
  const router = Router();
  router.use('/internal/accounts/:accountId', serviceCaller(deps.verifier, ['dashboard']));

  router.get('/internal/accounts/:accountId', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const answer: z.input<typeof getAccount.response> = {
      data: toAccountObject(await accounts.requireById(accountId)),
    };
    res.json(answer);
  });

  router.patch('/internal/accounts/:accountId', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseBody(updateAccount.request, req.body);
    const a = await accounts.update(accountId, { storeBodies: body.store_bodies }, dashboardActor(req));
    const answer: z.input<typeof updateAccount.response> = { data: toAccountObject(a) };
    res.json(answer);
  });

  router.get('/internal/accounts/:accountId/keys', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const q = parseInput(listAccountKeys.query, singleQuery(req.query as Record<string, unknown>));
    const offset = q.offset === undefined ? 0 : Number(q.offset);
    const rows = await keys.list(accountId, { includeRevoked: q.include_revoked === 'true', offset });
    const answer: z.input<typeof listAccountKeys.response> = {
      data: await presenter.present(rows, 'read'),
      next_offset: rows.length === PAGE_SIZE ? offset + PAGE_SIZE : null,
    };
    res.json(answer);
  });

  router.post('/internal/accounts/:accountId/keys', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseBody(createAccountKey.request, req.body);
    await accounts.requireById(accountId);
    const { row, key } = await keys.create(
      accountId,
      {
        name: body.name,
        scope: body.management ? 'management' : 'inference',
        limit: body.limit,
        limitReset: body.limit_reset,
        governance: governanceOf(body),
      },
      dashboardActor(req),
    );
    const [object] = await presenter.present([row], 'zero');
    const answer: z.input<typeof createAccountKey.response> = { data: { ...object!, key } };
    res.status(201).json(answer);
  });

  router.patch('/internal/accounts/:accountId/keys/:hash', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const hash = parseId(req.params.hash, 'hash', 'a key id');
    const body = parseBody(updateAccountKey.request, req.body);
    const row = await keys.update(
      accountId,
      hash,
      {
        name: body.name,
        disabled: body.disabled,
        limit: body.limit,
        limitReset: body.limit_reset,
        governance: governanceOf(body),
      },
      dashboardActor(req),
    );
    const [object] = await presenter.present([row], 'best-effort');
    const answer: z.input<typeof updateAccountKey.response> = { data: object! };
    res.json(answer);
  });

  router.delete('/internal/accounts/:accountId/keys/:hash', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const row = await keys.revoke(accountId, parseId(req.params.hash, 'hash', 'a key id'), {
      actor: dashboardActor(req),
    });
    const answer: z.input<typeof revokeAccountKey.response> = { data: { hash: row.id, deleted: true } };
    res.json(answer);
  });

  return router;
}
