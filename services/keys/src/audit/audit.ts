import { type AuditActor, type AuditChange, appendAuditEntry } from '@tollgate/db';
import type { Kysely } from 'kysely';
import { toCachedKey } from '../cache/key-cache-sync';
import type { Database } from '../database';
import type { ApiKey } from '../keys/keys.table';

type Db = Kysely<Database>;

export type { AuditActor } from '@tollgate/db';

export const ADMIN_CLI_ACTOR: AuditActor = { kind: 'admin_cli', id: null, address: null };

/** What the audit log keeps of a key: every managed field, never the digest. */
function keySnapshot(row: ApiKey): Record<string, unknown> {
  return {
    name: row.name,
    label: row.label,
    scope: row.scope,
    disabled: row.disabled,
    revoked: row.revoked,
    // A plain decimal ("5", not Postgres' "5.0000000000").
    limit: toCachedKey(row).limit,
    limit_reset: row.limit_reset,
    expires_at: row.expires_at?.toISOString() ?? null,
    include_byok_in_limit: row.include_byok_in_limit,
    allowed_models: row.allowed_models,
    rate_limit_rpm: row.rate_limit_rpm,
    rate_limit_tpm: row.rate_limit_tpm,
    store_bodies: row.store_bodies,
    team_id: row.team_id,
  };
}

/** Appends one entry; call it inside the transaction that commits the change (@tollgate/db). */
export const recordChange = (trx: Db, actor: AuditActor, change: AuditChange): Promise<void> =>
  appendAuditEntry(trx, 'keys', actor, change);

export const recordKeyChange = (
  trx: Db,
  actor: AuditActor,
  action: 'key.create' | 'key.update' | 'key.revoke',
  before: ApiKey | null,
  after: ApiKey,
): Promise<void> =>
  recordChange(trx, actor, {
    accountId: after.account_id,
    action,
    target: { kind: 'key', id: after.id },
    before: before ? keySnapshot(before) : null,
    after: keySnapshot(after),
  });
