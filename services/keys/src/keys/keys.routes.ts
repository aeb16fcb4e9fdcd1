import type { ServiceVerifier } from '@tollgate/auth';
import { createKeyBody, updateKeyBody } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { keyCallerClaims, parseId } from '@tollgate/http';
import { Router } from 'express';
import { callerOf, keyCaller, managementActor } from '../http/caller';
import type { KeyPresenter } from './key-view';
import { governanceOf, parseBody, parseListQuery } from './keys.schemas';
import type { KeyService } from './keys.service';

/** The management API (spec §4.1) and GET /key, as forwarded by the proxy with the prefix stripped. */
export function keysRoutes(deps: {
  keys: KeyService;
  presenter: KeyPresenter;
  verifier: ServiceVerifier;
}): Router {
  const { keys, presenter } = deps;
  const management = keyCaller(deps, 'management');
  const router = Router();

  router.post('/keys', management, async (req, res) => {
    const body = parseBody(createKeyBody, req.body);
    const { row, key } = await keys.create(
      callerOf(res).account_id,
      {
        name: body.name,
        scope: 'inference',
        limit: body.limit,
        limitReset: body.limit_reset,
        governance: governanceOf(body),
      },
      managementActor(req, res),
    );
    const [object] = await presenter.present([row], 'zero');
    // `data.key` (the spec) and top-level `key` (OpenRouter's create response).
    res.status(201).json({ data: { ...object, key }, key });
  });

  router.get('/keys', management, async (req, res) => {
    const q = parseListQuery(req.query as Record<string, unknown>);
    const rows = await keys.list(callerOf(res).account_id, {
      includeRevoked: q.includeRevoked,
      offset: q.offset,
    });
    res.json({ data: await presenter.present(rows, 'read') });
  });

  router.get('/keys/:hash', management, async (req, res) => {
    const row = await keys.get(callerOf(res).account_id, parseId(req.params.hash, 'hash', 'a key id'));
    const [object] = await presenter.present([row], 'read');
    res.json({ data: object });
  });

  router.patch('/keys/:hash', management, async (req, res) => {
    const hash = parseId(req.params.hash, 'hash', 'a key id');
    const body = parseBody(updateKeyBody, req.body);
    const caller = callerOf(res);
    // Like revoking itself: a management key that disabled itself could not undo it through the API.
    if (body.disabled === true && hash === caller.id) {
      throw new AppError(
        'forbidden',
        'A management key cannot disable itself; disable it in the dashboard (pnpm tollgate keys disable-management)',
      );
    }
    const row = await keys.update(
      caller.account_id,
      hash,
      {
        name: body.name,
        disabled: body.disabled,
        limit: body.limit,
        limitReset: body.limit_reset,
        governance: governanceOf(body),
      },
      managementActor(req, res),
    );
    const [object] = await presenter.present([row], 'best-effort');
    res.json({ data: object });
  });

  router.delete('/keys/:hash', management, async (req, res) => {
    const caller = callerOf(res);
    const row = await keys.revoke(caller.account_id, parseId(req.params.hash, 'hash', 'a key id'), {
      callerKeyId: caller.id,
      actor: managementActor(req, res),
    });
    // `data` (the spec's revocation result) and top-level `deleted` (OpenRouter's delete response).
    res.json({ data: { hash: row.id, deleted: true }, deleted: true });
  });

  // Any scope; the row is read (and checked) while billing's usage figures are fetched.
  router.get('/key', async (req, res) => {
    const claims = await keyCallerClaims(req, deps.verifier);
    res.json({ data: await presenter.presentCaller(claims, keys.authenticateCaller(claims)) });
  });

  return router;
}
