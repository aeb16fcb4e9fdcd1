import { createDb, migrateToLatest } from '@tollgate/db';
import type { Kysely } from 'kysely';
import { migrations } from '../migrations';
import type { AccountsTable } from './accounts/accounts.table';
import type { AuditLogTable } from './audit/audit.table';
import type { ApiKeysTable } from './keys/keys.table';
import type { TeamsTable } from './teams/teams.table';

/** Postgres schema owned by the keys service. */
export const KEYS_SCHEMA = 'keys';

export interface Database {
  'keys.accounts': AccountsTable;
  'keys.api_keys': ApiKeysTable;
  'keys.audit_log': AuditLogTable;
  'keys.teams': TeamsTable;
}

export type KeysDb = Kysely<Database>;

export const createKeysDb = (url: string, options: { max?: number } = {}): KeysDb =>
  createDb<Database>(url, options);

/** Idempotent; safe when several instances start at once. */
export const migrateKeysDb = (db: KeysDb) => migrateToLatest(db as Kysely<unknown>, KEYS_SCHEMA, migrations);
