export type { AuditLogTable } from '@tollgate/db';
