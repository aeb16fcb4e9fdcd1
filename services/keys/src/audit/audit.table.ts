import type { AuditLogTable } from '@tollgate/db';
import type { Selectable } from 'kysely';

export type { AuditActorKind, AuditLogTable } from '@tollgate/db';

/** A row of keys.audit_log (actions `key.create`, `key.update`, `key.revoke`, `team.*`). */
export type AuditRow = Selectable<AuditLogTable>;
