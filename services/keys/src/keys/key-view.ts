import type { Logger } from '@tollgate/logger';
import { toNumber, toUnits } from '@tollgate/money';
import { type LastUsedStore, latest } from '../last-used/last-used.store';
import { type KeyUsage, type UsageReader, ZERO_USAGE } from '../usage/usage-reader';
import type { ApiKey } from './keys.table';

/** The key object of the spec (§2.1) plus DESIGN.md's created_at, updated_at, usage, limit_remaining. */
export interface KeyObject {
  hash: string;
  name: string;
  label: string;
  scope: ApiKey['scope'];
  limit: number | null;
  limit_reset: ApiKey['limit_reset'];
  disabled: boolean;
  revoked: boolean;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
  usage: number;
  limit_remaining: number | null;
}

/** GET /key: the caller's own key with every period's usage. */
export interface CallerKeyObject extends KeyObject {
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  is_management_key: boolean;
}

/**
 * How usage figures are obtained: `read` fails with 503 when billing does not answer (GET routes);
 * `best-effort` falls back to zeros after logging (a response to a change that already committed);
 * `zero` skips billing (a key created this instant has spent nothing).
 */
export type UsageMode = 'read' | 'best-effort' | 'zero';

export interface KeyPresenter {
  present(rows: readonly ApiKey[], mode: UsageMode): Promise<KeyObject[]>;
  presentCaller(row: ApiKey): Promise<CallerKeyObject>;
}

const usd = (decimal: string) => toNumber(toUnits(decimal));

export function toKeyObject(row: ApiKey, usage: KeyUsage, pendingLastUsed?: Date): KeyObject {
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
  };
}

export function createKeyPresenter(deps: {
  usage: UsageReader;
  lastUsed: LastUsedStore;
  logger: Logger;
}): KeyPresenter {
  const readUsage = async (rows: readonly ApiKey[], mode: UsageMode): Promise<Map<string, KeyUsage>> => {
    const wanted = rows.map((r) => ({ id: r.id, limitReset: r.limit_reset }));
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
    async presentCaller(row) {
      const [usage, pending] = await Promise.all([readUsage([row], 'read'), deps.lastUsed.pending([row.id])]);
      const u = usage.get(row.id) ?? ZERO_USAGE;
      return {
        ...toKeyObject(row, u, pending.get(row.id)),
        usage_daily: usd(u.usage_daily),
        usage_weekly: usd(u.usage_weekly),
        usage_monthly: usd(u.usage_monthly),
        is_management_key: row.scope === 'management',
      };
    },
  };
}
