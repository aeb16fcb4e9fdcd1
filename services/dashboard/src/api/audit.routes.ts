import { timelinePage } from '@tollgate/audit';
import type { ServiceVerifier } from '@tollgate/auth';
import {
  AUDIT_SOURCES,
  type AuditEntry,
  type AuditSource,
  accountParams,
  auditQuery,
  type DashboardAnswerInput,
} from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { parseInput, serviceCaller } from '@tollgate/http';
import { Router } from 'express';
import type { DashboardDb } from '../database';
import { requireUser, userOf } from '../http/session';
import type { InternalClient } from '../upstream/internal-client';
import { listUserChanges } from '../users/users-audit';
import { csvCell } from './csv';

/** The filters the keys service's audit listing takes; anything else is a 400 here. */
const FILTERS = ['actor_kind', 'actor_id', 'action', 'target_id', 'since', 'until', 'before', 'limit'];
/** CSV export: at most this many entries (pages of 500 read from the keys service). */
const CSV_MAX_ENTRIES = 10_000;

function filtersOf(query: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (k === 'format' || k === 'source') continue;
    if (!FILTERS.includes(k)) throw badRequest(`${k}: unknown parameter`, { field: k });
    if (typeof v !== 'string') throw badRequest(`${k}: must be given once, as a plain value`, { field: k });
    out[k] = v;
  }
  return out;
}

const CSV_COLUMNS = [
  'source',
  'id',
  'at',
  'actor_kind',
  'actor_id',
  'client_address',
  'action',
  'target_kind',
  'target_id',
];

const csvRow = (e: AuditEntry & { source: string }) =>
  [
    e.source,
    e.id,
    e.at,
    e.actor.kind,
    e.actor.id,
    e.client_address,
    e.action,
    e.target.kind,
    e.target.id,
    e.before === null ? '' : JSON.stringify(e.before),
    e.after === null ? '' : JSON.stringify(e.after),
  ]
    .map(csvCell)
    .join(',');

/**
 * The account's audit log (owners and viewers): `GET /api/audit` (filters, newest first, paged with
 * `before`) and `?format=csv` (every entry matching the filters, up to CSV_MAX_ENTRIES, formula-guarded).
 * The entries are read from their owner (the keys service's internal API).
 */
async function pageOf(
  deps: { client: InternalClient; db: DashboardDb },
  accountId: string,
  source: AuditSource | 'all',
  filters: Record<string, string>,
): Promise<DashboardAnswerInput<'audit'>> {
  if (source === 'all') return timelinePage((s, f) => pageOf(deps, accountId, s, f), filters);
  const page =
    source === 'keys'
      ? await deps.client.audit(accountId, filters)
      : source === 'billing'
        ? await deps.client.billingAudit(accountId, filters)
        : await listUserChanges(deps.db, accountId, parseInput(auditQuery, filters));
  // Each entry names its log, as the merged timeline's do.
  return { ...page, data: page.data.map((e) => ({ ...e, source })) };
}

export function auditRoutes(deps: {
  client: InternalClient;
  db: DashboardDb;
  verifier: ServiceVerifier;
}): Router {
  const router = Router();
  // The keys service's read of this log, for the merged `GET /audit` of management keys.
  router.get(
    '/internal/accounts/:accountId/audit',
    serviceCaller(deps.verifier, ['keys']),
    async (req, res) => {
      const { accountId } = parseInput(accountParams, req.params);
      res.json(await listUserChanges(deps.db, accountId, parseInput(auditQuery, req.query)));
    },
  );
  router.get('/api/audit', requireUser, async (req, res) => {
    const format = req.query.format;
    if (format !== undefined && format !== 'json' && format !== 'csv')
      throw badRequest('format: expected json or csv');
    const source = req.query.source ?? 'keys';
    if (source !== 'all' && !AUDIT_SOURCES.includes(source as AuditSource))
      throw badRequest('source: expected all, keys, dashboard or billing');
    const filters = filtersOf(req.query as Record<string, unknown>);
    const accountId = userOf(res).accountId;
    if (format !== 'csv') {
      res.json(await pageOf(deps, accountId, source as AuditSource | 'all', filters));
      return;
    }
    const lines = [[...CSV_COLUMNS, 'before', 'after'].map(csvCell).join(',')];
    let before: string | null | undefined = filters.before;
    for (let n = 0; n < CSV_MAX_ENTRIES; ) {
      const page = await pageOf(deps, accountId, source as AuditSource | 'all', {
        ...filters,
        ...(before ? { before } : {}),
        limit: '500',
      });
      for (const e of page.data) lines.push(csvRow(e));
      n += page.data.length;
      before = page.next_before;
      if (!before) break;
    }
    res.setHeader('content-type', 'text/csv; charset=utf-8');
    res.setHeader('content-disposition', 'attachment; filename="audit.csv"');
    res.send(`${lines.join('\r\n')}\r\n`);
  });
  return router;
}
