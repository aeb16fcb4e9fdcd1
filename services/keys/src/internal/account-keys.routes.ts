import type { ServiceVerifier } from '@tollgate/auth';
import { badRequest } from '@tollgate/errors';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import { z } from 'zod';
import type { AccountService } from '../accounts/accounts.service';
import type { KeyPresenter } from '../keys/key-view';
import { PAGE_SIZE } from '../keys/keys.repository';
import { createKeyBody, parseBody, parseHash, updateKeyBody } from '../keys/keys.schemas';
import type { KeyService } from '../keys/keys.service';

const accountParams = z.object({ accountId: z.string().uuid('expected an account id (uuid)') });

/** The dashboard's create: the public body plus the management-key option. */
const dashboardCreateBody = createKeyBody.extend({
  management: z.boolean({ error: 'expected true or false' }).optional(),
});

function parseDashboardList(query: Record<string, unknown>) {
  const inc = query.include_revoked;
  if (inc !== undefined && inc !== 'true' && inc !== 'false') {
    throw badRequest('include_revoked: must be true or false', { field: 'include_revoked' });
  }
  const off = query.offset;
  if (off !== undefined && (typeof off !== 'string' || !/^\d{1,9}$/.test(off))) {
    throw badRequest('offset: must be a non-negative integer', { field: 'offset' });
  }
  for (const k of Object.keys(query)) {
    if (k !== 'include_revoked' && k !== 'offset') throw badRequest(`${k}: unknown parameter`, { field: k });
  }
  return { includeRevoked: inc === 'true', offset: off === undefined ? 0 : Number(off) };
}

/**
 * The dashboard's key management (service token; the account is named in the path, the dashboard
 * checked the signed-in user belongs to it). Unlike the public API it sees both scopes, creates a
 * management key when asked (the only way besides the admin CLI), and revokes any key including
 * management keys.
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
    const a = await accounts.requireById(accountId);
    res.json({ data: { id: a.id, slug: a.slug, name: a.name } });
  });

  router.get('/internal/accounts/:accountId/keys', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const q = parseDashboardList(req.query as Record<string, unknown>);
    const rows = await keys.list(accountId, { includeRevoked: q.includeRevoked, offset: q.offset });
    res.json({
      data: await presenter.present(rows, 'read'),
      next_offset: rows.length === PAGE_SIZE ? q.offset + PAGE_SIZE : null,
    });
  });

  router.post('/internal/accounts/:accountId/keys', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const body = parseBody(dashboardCreateBody, req.body);
    await accounts.requireById(accountId);
    const { row, key } = await keys.create(accountId, {
      name: body.name,
      scope: body.management ? 'management' : 'inference',
      limit: body.limit,
      limitReset: body.limit_reset,
    });
    const [object] = await presenter.present([row], 'zero');
    res.status(201).json({ data: { ...object, key } });
  });

  router.patch('/internal/accounts/:accountId/keys/:hash', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const hash = parseHash(req.params.hash);
    const body = parseBody(updateKeyBody, req.body);
    const row = await keys.update(accountId, hash, {
      name: body.name,
      disabled: body.disabled,
      limit: body.limit,
      limitReset: body.limit_reset,
    });
    const [object] = await presenter.present([row], 'best-effort');
    res.json({ data: object });
  });

  router.delete('/internal/accounts/:accountId/keys/:hash', async (req, res) => {
    const { accountId } = parseInput(accountParams, req.params);
    const row = await keys.revoke(accountId, parseHash(req.params.hash));
    res.json({ data: { hash: row.id, deleted: true } });
  });

  return router;
}
