export type { AuditActorKind, AuditLogTable } from '@tollgate/db';
