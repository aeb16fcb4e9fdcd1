import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseInput, serviceCaller } from '@tollgate/http';
import { type Request, Router } from 'express';
import { z } from 'zod';
import type { KeysDb } from '../database';
import { callerOf, keyCaller } from '../http/caller';
import type { KeyService } from '../keys/keys.service';
import { type AuditQuery, listAudit, presentAudit } from './audit';

const instant = z.iso.datetime({ offset: true }).transform((v) => new Date(v));

const auditQuery = z.strictObject({
  actor_kind: z.enum(['management_key', 'user', 'admin_cli']).optional(),
  actor_id: z.string().min(1).max(64).optional(),
  action: z.string().min(1).max(64).optional(),
  target_id: z.string().min(1).max(64).optional(),
  since: instant.optional(),
  until: instant.optional(),
  before: z
    .string()
    .regex(/^[1-9][0-9]{0,17}$/, 'an entry id')
    .optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

function parseAuditQuery(req: Request, accountId: string): AuditQuery {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`, { field: k });
    raw[k] = v;
  }
  const q = parseInput(auditQuery, raw);
  return {
    accountId,
    actorKind: q.actor_kind,
    actorId: q.actor_id,
    action: q.action,
    targetId: q.target_id,
    since: q.since,
    until: q.until,
    before: q.before,
    limit: q.limit,
  };
}

/** One page, newest first; `next_before` continues the listing (null: no more). */
async function page(db: KeysDb, q: AuditQuery) {
  const rows = await listAudit(db, q);
  return {
    data: rows.map(presentAudit),
    next_before: rows.length === q.limit ? (rows[rows.length - 1]?.id ?? null) : null,
  };
}

/**
 * The audit log of key changes: `GET /audit` for management keys (through the proxy, like `/keys`)
 * and the dashboard's `GET /internal/accounts/:accountId/audit`.
 */
export function auditRoutes(deps: { db: KeysDb; keys: KeyService; verifier: ServiceVerifier }): Router {
  const router = Router();
  router.get('/audit', keyCaller(deps, 'management'), async (req, res) => {
    res.json(await page(deps.db, parseAuditQuery(req, callerOf(res).account_id)));
  });
  router.get(
    '/internal/accounts/:accountId/audit',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      res.json(await page(deps.db, parseAuditQuery(req, accountId)));
    },
  );
  return router;
}
