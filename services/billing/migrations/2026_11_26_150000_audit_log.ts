import { createAuditLog, dropAuditLog } from '@tollgate/db';
import type { Kysely } from 'kysely';

/**
 * The audit log of credit and account-setting changes (append-only): who (a management key, a dashboard user or the admin
 * CLI), when, what, the record before and after, and the client's address. A trigger refuses UPDATE,
 * DELETE and TRUNCATE, whatever role the service connects with.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createAuditLog(db, 'billing');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await dropAuditLog(db, 'billing');
}
