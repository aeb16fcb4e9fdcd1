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
