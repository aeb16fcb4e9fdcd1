import { timelinePage } from '@tollgate/audit';
import type { ServiceVerifier } from '@tollgate/auth';
import { accountParams, auditQuery, auditTimelineQuery } from '@tollgate/contracts';
import { listAuditLog } from '@tollgate/db';
import { badRequest } from '@tollgate/errors';
import { parseInput, serviceCaller } from '@tollgate/http';
import { type Request, Router } from 'express';
import type { KeysDb } from '../database';
import { callerOf, keyCaller } from '../http/caller';
import type { KeyService } from '../keys/keys.service';
import type { RemoteAuditLogs } from './audit-sources';

/** The query as plain strings (a parameter given twice, or as an object, is a 400). */
function rawQuery(req: Request): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`, { field: k });
    raw[k] = v;
  }
  return raw;
}

/** One page of the keys service's own log, newest first; `next_before` continues it (null: no more). */
const ownPage = (db: KeysDb, accountId: string, filters: Record<string, string>) =>
  listAuditLog(db, 'keys', accountId, parseInput(auditQuery, filters));

/**
 * The audit log: `GET /audit` for management keys (through the proxy, like `/keys`) is the merged
 * timeline of every log (this service's keys and teams, billing's credits and postpaid, the
 * dashboard's users, roles, teams and sessions; `@tollgate/audit`), and
 * `GET /internal/accounts/:accountId/audit` is this service's own log, for the dashboard.
 */
export function auditRoutes(deps: {
  db: KeysDb;
  keys: KeyService;
  verifier: ServiceVerifier;
  remoteAudit: RemoteAuditLogs;
}): Router {
  const router = Router();
  router.get('/audit', keyCaller(deps, 'management'), async (req, res) => {
    const filters = rawQuery(req);
    parseInput(auditTimelineQuery, filters); // every filter checked before any log is read
    const accountId = callerOf(res).account_id;
    res.json(
      await timelinePage(
        (source, f) =>
          source === 'keys' ? ownPage(deps.db, accountId, f) : deps.remoteAudit.read(source, accountId, f),
        filters,
      ),
    );
  });
  router.get(
    '/internal/accounts/:accountId/audit',
    serviceCaller(deps.verifier, ['dashboard']),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      res.json(await ownPage(deps.db, accountId, rawQuery(req)));
    },
  );
  return router;
}
