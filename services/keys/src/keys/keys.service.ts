import { digestKey, generateKey, type KeyScope, keyLabel } from '@tollgate/auth';
import { AppError, badRequest, notFound, unauthorized } from '@tollgate/errors';
import { type CachedKey, expiredKeyMessage } from '@tollgate/key-cache';
import { type LimitReset, toUnits } from '@tollgate/money';
import { ADMIN_CLI_ACTOR, type AuditActor, recordKeyChange } from '../audit/audit';
import { applyKeyChange, contextOf, type KeyChangeDeps, toCachedKey } from '../cache/key-cache-sync';
import type { KeysDb } from '../database';
import { lockTeam } from '../teams/teams.repository';
import {
  findKeyByDigest,
  findKeyInAccount,
  findOwnersByIds,
  insertKey,
  listKeys,
  lockKeyInAccount,
  PAGE_SIZE,
  updateKey,
} from './keys.repository';
import type { ApiKey, ApiKeyUpdate } from './keys.table';

interface CreateKeyInput {
  name: string;
  scope: KeyScope;
  /** USD decimal string, validated by the caller. */
  limit?: string | null;
  limitReset?: LimitReset | null;
  governance?: KeyGovernanceInput;
}

/** The governance fields of create and update (undefined = unchanged / default). */
export interface KeyGovernanceInput {
  expiresAt?: Date | null;
  includeByokInLimit?: boolean;
  allowedModels?: string[];
  rateLimitRpm?: number | null;
  /** Tokens per minute (worst case at admission), null = none. */
  rateLimitTpm?: number | null;
  /** Opt-in bodies (issue 28). */
  storeBodies?: boolean;
  /** A team of the key's account, or null for none (inference keys only). */
  teamId?: string | null;
}

interface UpdateKeyInput {
  name?: string;
  disabled?: boolean;
  limit?: string | null;
  limitReset?: LimitReset | null;
  governance?: KeyGovernanceInput;
}

export interface KeyService {
  /** The caller named by a proxy-issued identity; 401 unless that key exists, is usable, and matches. */
  authenticateCaller(claims: { keyId: string; accountId: string; scope: KeyScope }): Promise<ApiKey>;
  /** Returns the row and the plaintext key (the only time it exists outside the caller). */
  /**
   * `actor`: who asks, written to the audit log in the same transaction (as for update and revoke);
   * omitted = an in-process caller, i.e. the admin CLI (and the test kit, which stands in for it).
   */
  create(accountId: string, input: CreateKeyInput, actor?: AuditActor): Promise<{ row: ApiKey; key: string }>;
  get(accountId: string, id: string): Promise<ApiKey>;
  list(
    accountId: string,
    q: { includeRevoked: boolean; offset?: number; scope?: KeyScope },
  ): Promise<ApiKey[]>;
  update(accountId: string, id: string, input: UpdateKeyInput, actor?: AuditActor): Promise<ApiKey>;
  /** Idempotent. `callerKeyId`: the management key asking (it may not revoke itself); omitted for the dashboard. */
  revoke(
    accountId: string,
    id: string,
    options?: { callerKeyId?: string; actor?: AuditActor },
  ): Promise<ApiKey>;
  /** The proxy's cache miss: the record (also cached with the version CAS), or null (negative cache). */
  resolve(digest: string): Promise<CachedKey | null>;
  /** The keys of these ids that exist, any account (billing's key → account checks). */
  /** Keys of these ids with their team's budget (billing's `POST /internal/keys/owners`). */
  owners(ids: readonly string[]): Promise<Awaited<ReturnType<typeof findOwnersByIds>>>;
}

export type KeyServiceDeps = KeyChangeDeps;

const keyNotFound = () => notFound('No such key');

export function createKeyService(deps: KeyServiceDeps): KeyService {
  const { db, cache, logger } = deps;

  return {
    owners: (ids) => findOwnersByIds(db, ids),

    async authenticateCaller(claims) {
      const row = await findKeyInAccount(db, claims.accountId, claims.keyId);
      if (!row || row.revoked || row.disabled || row.scope !== claims.scope) throw unauthorized();
      if (row.expires_at !== null && row.expires_at.getTime() <= Date.now())
        throw unauthorized(expiredKeyMessage(row.expires_at.getTime()));
      return row;
    },

    async create(accountId, input, actor = ADMIN_CLI_ACTOR) {
      if (input.scope === 'management' && (input.limit != null || input.limitReset != null)) {
        throw badRequest('limit: management keys carry no spend limit');
      }
      const key = generateKey();
      const teamId = input.governance?.teamId ?? null;
      const { row } = await applyKeyChange(deps, async (trx) => {
        const created = await insertKey(trx, {
          team_id: await checkTeam(trx, accountId, input.scope, teamId),
          account_id: accountId,
          name: input.name,
          label: keyLabel(key),
          scope: input.scope,
          digest: digestKey(key),
          limit: input.limit ?? null,
          limit_reset: input.limitReset ?? null,
          expires_at: input.governance?.expiresAt ?? null,
          include_byok_in_limit: input.governance?.includeByokInLimit ?? false,
          allowed_models: input.governance?.allowedModels ?? [],
          rate_limit_rpm: input.governance?.rateLimitRpm ?? null,
          rate_limit_tpm: input.governance?.rateLimitTpm ?? null,
          store_bodies: input.governance?.storeBodies ?? false,
        });
        await recordKeyChange(trx, actor, 'key.create', null, created);
        return { changed: true, row: created };
      });
      return { row, key };
    },

    async get(accountId, id) {
      const row = await findKeyInAccount(db, accountId, id);
      if (!row) throw keyNotFound();
      return row;
    },

    list(accountId, q) {
      return listKeys(db, {
        accountId,
        includeRevoked: q.includeRevoked,
        offset: q.offset,
        scope: q.scope,
        limit: PAGE_SIZE,
      });
    },

    async update(accountId, id, input, actor = ADMIN_CLI_ACTOR) {
      const { row } = await applyKeyChange(deps, async (trx) => {
        const current = await lockKeyInAccount(trx, accountId, id);
        if (!current) throw keyNotFound();
        if (current.revoked)
          throw new AppError('conflict', 'This key is revoked; revoked keys cannot be modified');
        if (current.scope === 'management') {
          if (input.limit != null) throw badRequest('limit: management keys carry no spend limit');
          if (input.limitReset != null) throw badRequest('limit_reset: management keys carry no spend limit');
        }
        const changes: ApiKeyUpdate = {};
        if (input.name !== undefined && input.name !== current.name) changes.name = input.name;
        if (input.disabled !== undefined && input.disabled !== current.disabled)
          changes.disabled = input.disabled;
        if (input.limit !== undefined && !sameDecimal(input.limit, current.limit))
          changes.limit = input.limit;
        if (input.limitReset !== undefined && input.limitReset !== current.limit_reset) {
          changes.limit_reset = input.limitReset;
        }
        governanceChanges(current, input.governance, changes);
        const teamId = input.governance?.teamId;
        if (teamId !== undefined && teamId !== current.team_id) {
          changes.team_id = await checkTeam(trx, accountId, current.scope, teamId);
        }
        if (Object.keys(changes).length === 0) return { row: current, changed: false };
        const updated = await updateKey(trx, current.id, changes);
        await recordKeyChange(trx, actor, 'key.update', current, updated);
        return { row: updated, changed: true };
      });
      return row;
    },

    async revoke(accountId, id, options = {}) {
      const { row } = await applyKeyChange(deps, async (trx) => {
        const current = await lockKeyInAccount(trx, accountId, id);
        if (!current) throw keyNotFound();
        if (options.callerKeyId === current.id) {
          throw new AppError(
            'forbidden',
            'A management key cannot revoke itself; revoke it in the dashboard (pnpm tollgate keys revoke-management)',
          );
        }
        if (current.revoked) return { row: current, changed: false };
        const revoked = await updateKey(trx, current.id, { revoked: true, disabled: true });
        await recordKeyChange(trx, options.actor ?? ADMIN_CLI_ACTOR, 'key.revoke', current, revoked);
        return { row: revoked, changed: true };
      });
      return row;
    },

    async resolve(digest) {
      const row = await findKeyByDigest(db, digest);
      // Read after the key: a team or account change bumps the key's version, so a fill with an
      // older team budget or account switch than the one cached is refused by the version CAS.
      const record = row ? toCachedKey(row, await contextOf(db, row)) : null;
      try {
        if (!record) {
          await cache.fillAbsent(digest);
          return null;
        }
        await cache.fill(digest, record);
      } catch (err) {
        // The answer is still right; the proxy will ask again next time.
        logger.warn({ err }, 'key cache fill failed');
      }
      return record;
    },
  };
}

function governanceChanges(current: ApiKey, g: KeyGovernanceInput | undefined, changes: ApiKeyUpdate): void {
  if (!g) return;
  if (g.expiresAt !== undefined && g.expiresAt?.getTime() !== current.expires_at?.getTime()) {
    changes.expires_at = g.expiresAt;
  }
  if (g.includeByokInLimit !== undefined && g.includeByokInLimit !== current.include_byok_in_limit) {
    changes.include_byok_in_limit = g.includeByokInLimit;
  }
  if (g.allowedModels !== undefined && g.allowedModels.join('\n') !== current.allowed_models.join('\n')) {
    changes.allowed_models = g.allowedModels;
  }
  if (g.rateLimitRpm !== undefined && g.rateLimitRpm !== current.rate_limit_rpm) {
    changes.rate_limit_rpm = g.rateLimitRpm;
  }
  if (g.rateLimitTpm !== undefined && g.rateLimitTpm !== current.rate_limit_tpm) {
    changes.rate_limit_tpm = g.rateLimitTpm;
  }
  if (g.storeBodies !== undefined && g.storeBodies !== current.store_bodies) {
    changes.store_bodies = g.storeBodies;
  }
}

/** The team a key may join: one of the key's account (locked until commit: its deletion waits), inference keys only. */
async function checkTeam(
  trx: KeysDb,
  accountId: string,
  scope: KeyScope,
  teamId: string | null,
): Promise<string | null> {
  if (teamId === null) return null;
  if (scope === 'management')
    throw badRequest('team_id: management keys belong to no team', { field: 'team_id' });
  if (!(await lockTeam(trx, accountId, teamId))) {
    throw badRequest('team_id: no such team in this account (GET /teams)', { field: 'team_id' });
  }
  return teamId;
}

function sameDecimal(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  return toUnits(a) === toUnits(b);
}
