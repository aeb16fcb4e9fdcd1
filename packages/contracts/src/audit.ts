import { z } from 'zod';
import { accountPath } from './common';

/** One audit-log entry (`GET /audit`, the dashboard's audit page): a change, who made it, before and after. */
export const auditEntry = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.object({ kind: z.enum(['management_key', 'user', 'admin_cli']), id: z.string().nullable() }),
  client_address: z.string().nullable(),
  action: z.string(),
  target: z.object({ kind: z.string(), id: z.string() }),
  before: z.record(z.string(), z.unknown()).nullable(),
  after: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditEntry = z.output<typeof auditEntry>;

/** A page of entries, newest first; `next_before` is the `before` of the next page (null: the last page). */
export const auditPage = z.object({ data: z.array(auditEntry), next_before: z.string().nullable() });

/** The dashboard's read of an account's audit log (keys service, internal; billing's has the same shape). */
export const accountAudit = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/audit`,
  response: auditPage,
} as const;

const instant = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 instant' });

/** The filters every audit log takes (keys, billing, dashboard): one entry shape, one query shape. */
export const auditQuery = z.strictObject({
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
export type AuditQueryInput = z.output<typeof auditQuery>;

/** The three audit logs: keys (keys, teams), billing (credits, postpaid), dashboard (users, roles, SSO). */
export const AUDIT_SOURCES = ['keys', 'billing', 'dashboard'] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];

/** An entry of the merged timeline (`GET /audit`, the dashboard's `source=all`): which log it is from. */
export const auditTimelineEntry = auditEntry.extend({ source: z.enum(AUDIT_SOURCES) });
export type AuditTimelineEntry = z.output<typeof auditTimelineEntry>;

/** A page of the merged timeline; `next_before` is the cursor of the next page (`keys:120,billing:end,…`). */
export const auditTimelinePage = z.object({
  data: z.array(auditTimelineEntry),
  next_before: z.string().nullable(),
});

/** The merged timeline's filters: every log's, `before` the timeline's cursor (checked by `@tollgate/audit`). */
export const auditTimelineQuery = auditQuery.extend({ before: z.string().max(200).optional() });
