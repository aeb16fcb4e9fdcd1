import type { KeyObject } from '@tollgate/contracts';
import type { Logger } from '@tollgate/logger';
import { toNumber, toUnits } from '@tollgate/money';
import { type LastUsedStore, latest } from '../last-used/last-used.store';
import { type KeyUsage, type UsageReader, ZERO_USAGE } from '../usage/usage-reader';
import type { ApiKey } from './keys.table';

/** The key object of the spec (§2.1) plus DESIGN.md's and OpenRouter's fields: `@tollgate/contracts`. */
export type { KeyObject };

/** OpenRouter's `rate_limit` object of GET /key. */
interface RateLimitObject {
  requests: number;
  interval: string;
  note: string;
}

/** GET /key: the caller's own key, with OpenRouter's account-level fields. */
export interface CallerKeyObject extends KeyObject {
  is_management_key: boolean;
  is_provisioning_key: boolean;
  is_free_tier: false;
  rate_limit: RateLimitObject;
  free_model_daily_requests: { limit: 0; remaining: 0; used: 0 };
  allowed_data_regions: [];
  organization_id: null;
}

/**
 * How usage figures are obtained: `read` fails with 503 when billing does not answer (GET routes);
 * `best-effort` falls back to zeros after logging (a response to a change that already committed);
 * `zero` skips billing (a key created this instant has spent nothing).
 */
type UsageMode = 'read' | 'best-effort' | 'zero';

export interface KeyPresenter {
  present(rows: readonly ApiKey[], mode: UsageMode): Promise<KeyObject[]>;
  /**
   * GET /key: the caller's object. `row` is the caller's row being read (its failure — 401 for a
   * revoked key — is the answer); the usage figures are read meanwhile by key id alone.
   */
  presentCaller(caller: { keyId: string; accountId: string }, row: Promise<ApiKey>): Promise<CallerKeyObject>;
}

const usd = (decimal: string) => toNumber(toUnits(decimal));

function toKeyObject(row: ApiKey, usage: KeyUsage, pendingLastUsed?: Date): KeyObject {
  const usedUnits = toUnits(usage.usage);
  const limitUnits = row.limit === null ? null : toUnits(row.limit);
  const remaining = limitUnits === null ? null : limitUnits > usedUnits ? limitUnits - usedUnits : 0n;
  const lastUsed = latest(row.last_used_at, pendingLastUsed);
  return {
    hash: row.id,
    name: row.name,
    label: row.label,
    scope: row.scope,
    limit: limitUnits === null ? null : toNumber(limitUnits),
    limit_reset: row.limit_reset,
    disabled: row.disabled || row.revoked,
    revoked: row.revoked,
    last_used_at: lastUsed ? lastUsed.toISOString() : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    usage: toNumber(usedUnits),
    limit_remaining: remaining === null ? null : toNumber(remaining),
    usage_daily: usd(usage.usage_daily),
    usage_weekly: usd(usage.usage_weekly),
    usage_monthly: usd(usage.usage_monthly),
    expires_at: row.expires_at === null ? null : row.expires_at.toISOString(),
    include_byok_in_limit: row.include_byok_in_limit,
    allowed_models: row.allowed_models,
    rate_limit_rpm: row.rate_limit_rpm,
    rate_limit_tpm: row.rate_limit_tpm,
    store_bodies: row.store_bodies,
    team_id: row.team_id,
    byok_usage: 0,
    byok_usage_daily: 0,
    byok_usage_weekly: 0,
    byok_usage_monthly: 0,
    creator_user_id: null,
    external_user: null,
    workspace_id: row.account_id,
  };
}

/** The `usage` figure of a key with this limit period, from figures read for all periods. */
function usageOfPeriod(u: KeyUsage, reset: ApiKey['limit_reset']): string {
  switch (reset) {
    case 'daily':
      return u.usage_daily;
    case 'weekly':
      return u.usage_weekly;
    case 'monthly':
      return u.usage_monthly;
    default:
      return u.usage;
  }
}

/** The key's request rate limit in OpenRouter's `rate_limit` shape (requests 0 = none). */
function rateLimitObject(rpm: number | null): RateLimitObject {
  return rpm === null
    ? { requests: 0, interval: '1m', note: 'This key has no request rate limit (requests 0 = unlimited).' }
    : {
        requests: rpm,
        interval: '1m',
        note: `At most ${rpm} requests per minute for this key, across all proxies.`,
      };
}

export function createKeyPresenter(deps: {
  usage: UsageReader;
  lastUsed: LastUsedStore;
  logger: Logger;
}): KeyPresenter {
  const readUsage = async (rows: readonly ApiKey[], mode: UsageMode): Promise<Map<string, KeyUsage>> => {
    const wanted = rows.map((r) => ({ id: r.id, accountId: r.account_id, limitReset: r.limit_reset }));
    if (mode === 'zero' || rows.length === 0) return new Map();
    if (mode === 'read') return deps.usage.read(wanted);
    try {
      return await deps.usage.read(wanted);
    } catch (err) {
      deps.logger.warn({ err }, 'usage figures unavailable; answering with zeros');
      return new Map();
    }
  };

  const present = async (rows: readonly ApiKey[], mode: UsageMode) => {
    const [usage, pending] = await Promise.all([
      readUsage(rows, mode),
      deps.lastUsed.pending(rows.map((r) => r.id)),
    ]);
    return rows.map((r) => toKeyObject(r, usage.get(r.id) ?? ZERO_USAGE, pending.get(r.id)));
  };

  return {
    present,
    async presentCaller({ keyId, accountId }, loading) {
      // Billing's figures need only the key id: every period is asked for (limit_reset null) while
      // the row is read, and the figure of the key's own limit period is picked once it is known.
      // Two hops in parallel instead of one after the other (issue 11: GET /key p50).
      const figures = Promise.all([
        deps.usage.read([{ id: keyId, accountId, limitReset: null }]),
        deps.lastUsed.pending([keyId]),
      ]);
      figures.catch(() => {}); // awaited below; the row's own error (401) is answered first
      const row = await loading;
      const [usage, pending] = await figures;
      const all = usage.get(keyId) ?? ZERO_USAGE;
      const u: KeyUsage = { ...all, usage: usageOfPeriod(all, row.limit_reset) };
      return {
        ...toKeyObject(row, u, pending.get(keyId)),
        is_management_key: row.scope === 'management',
        // OpenRouter's provisioning key is what Tollgate calls a management key.
        is_provisioning_key: row.scope === 'management',
        is_free_tier: false,
        rate_limit: rateLimitObject(row.rate_limit_rpm),
        free_model_daily_requests: { limit: 0, remaining: 0, used: 0 },
        allowed_data_regions: [],
        organization_id: null,
      };
    },
  };
}
