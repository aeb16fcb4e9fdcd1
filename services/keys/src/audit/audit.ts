import type { AuditEntry } from '@tollgate/contracts';
import type { Kysely } from 'kysely';
import { toCachedKey } from '../cache/key-cache-sync';
import type { Database } from '../database';
import type { ApiKey } from '../keys/keys.table';
import type { AuditActorKind, AuditRow } from './audit.table';

type Db = Kysely<Database>;

/** Who made a change: a management key (through the proxy), a dashboard user, or the admin CLI. */
export interface AuditActor {
  kind: AuditActorKind;
  /** The management key's id or the dashboard user's id; null for the admin CLI. */
  id: string | null;
  /** The client's address as the edge resolved it (TRUSTED_PROXIES); null for the admin CLI. */
  address: string | null;
}

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

/** Appends one entry; call it inside the transaction that commits the change. */
export async function recordChange(
  trx: Db,
  actor: AuditActor,
  change: {
    accountId: string;
    action: string;
    target: { kind: string; id: string };
    before: Record<string, unknown> | null;
    after: Record<string, unknown> | null;
  },
): Promise<void> {
  await trx
    .insertInto('keys.audit_log')
    .values({
      account_id: change.accountId,
      actor_kind: actor.kind,
      actor_id: actor.id,
      client_address: actor.address,
      action: change.action,
      target_kind: change.target.kind,
      target_id: change.target.id,
      before: change.before ? JSON.stringify(change.before) : null,
      after: change.after ? JSON.stringify(change.after) : null,
    })
    .execute();
}

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

export interface AuditQuery {
  accountId: string;
  actorKind?: AuditActorKind;
  actorId?: string;
  action?: string;
  targetId?: string;
  since?: Date;
  until?: Date;
  /** Entries with an id below this one (the next page of a newest-first listing). */
  before?: string;
  limit: number;
}

/** Newest first. */
export function listAudit(db: Db, q: AuditQuery): Promise<AuditRow[]> {
  let query = db.selectFrom('keys.audit_log').selectAll().where('account_id', '=', q.accountId);
  if (q.actorKind) query = query.where('actor_kind', '=', q.actorKind);
  if (q.actorId) query = query.where('actor_id', '=', q.actorId);
  if (q.action) query = query.where('action', '=', q.action);
  if (q.targetId) query = query.where('target_id', '=', q.targetId);
  if (q.since) query = query.where('at', '>=', q.since);
  if (q.until) query = query.where('at', '<', q.until);
  if (q.before) query = query.where('id', '<', q.before as never);
  return query.orderBy('id', 'desc').limit(q.limit).execute();
}

/** The API's audit entry. */
export function presentAudit(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: { kind: row.actor_kind, id: row.actor_id },
    client_address: row.client_address,
    action: row.action,
    target: { kind: row.target_kind, id: row.target_id },
    before: (row.before ?? null) as Record<string, unknown> | null,
    after: (row.after ?? null) as Record<string, unknown> | null,
  };
}
