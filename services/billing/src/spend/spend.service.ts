import type { KeyUsage } from '@tollgate/contracts';
import { type LimitReset, periodKey, toDecimal, toUnits } from '@tollgate/money';
import type { SpendStore } from '@tollgate/spend';
import { readAccountSettings } from '../credits/credits.repository';
import type { BillingDb } from '../database';
import { accountUsage, keySpendFrom, spendForPeriods, teamSpendFrom } from './spend.repository';

export interface SpendService {
  /**
   * Current-period spend of each key (for key objects in the keys service) or team (the dashboard's
   * Teams page), decimal USD strings.
   */
  usageOf(
    owner: 'key' | 'team',
    items: Array<{ id: string; limitReset: LimitReset | null }>,
  ): Promise<Record<string, KeyUsage>>;
  /**
   * Loads a key's and/or an account's spend hash into Redis from Postgres. Two steps: a placeholder
   * first, then the Postgres read, then a monotonic load; a worker update racing with the read is
   * therefore either already in what was read or applied on top of it, never lost.
   */
  rebuild(
    target: { accountId: string; keyId: string | null; teamId?: string | null },
    at: Date,
  ): Promise<void>;
}

export function createSpendService(deps: {
  db: BillingDb;
  spend: SpendStore;
  clock: () => Date;
}): SpendService {
  return {
    async usageOf(owner, keys) {
      const now = deps.clock();
      const periods = {
        daily: periodKey('daily', now),
        weekly: periodKey('weekly', now),
        monthly: periodKey('monthly', now),
        all: periodKey(null, now),
      };
      const ids = [...new Set(keys.map((k) => k.id))];
      const rows = await spendForPeriods(deps.db, owner, ids, Object.values(periods));
      const amounts = new Map(rows.map((r) => [`${r.id}|${r.period}`, toDecimal(toUnits(r.amount))]));
      const get = (id: string, period: string) => amounts.get(`${id}|${period}`) ?? '0';
      const out: Record<string, KeyUsage> = {};
      for (const k of keys) {
        out[k.id] = {
          usage: get(k.id, periodKey(k.limitReset, now)),
          usage_daily: get(k.id, periods.daily),
          usage_weekly: get(k.id, periods.weekly),
          usage_monthly: get(k.id, periods.monthly),
        };
      }
      return out;
    },

    async rebuild({ accountId, keyId, teamId }, at) {
      const atMs = at.getTime();
      const team = teamId ? { accountId, teamId } : undefined;
      await deps.spend.beginRebuild({ accountId, keyId: keyId ?? undefined, team }, atMs);
      const current = { d: periodKey('daily', at), w: periodKey('weekly', at), m: periodKey('monthly', at) };
      const tasks: Array<Promise<void>> = [
        (async () => {
          const [usage, settings] = await Promise.all([
            accountUsage(deps.db, accountId),
            readAccountSettings(deps.db, accountId),
          ]);
          await deps.spend.loadAccount(accountId, atMs, {
            usageUnits: toUnits(usage),
            creditsUnits: settings.creditsUnits,
            postpaid: settings.postpaid,
            version: settings.version,
          });
        })(),
      ];
      if (keyId) {
        tasks.push(
          (async () => {
            const rows = await keySpendFrom(deps.db, keyId, current);
            await deps.spend.loadKey(
              accountId,
              keyId,
              atMs,
              current,
              rows.map((r) => [r.period, toUnits(r.amount)]),
            );
          })(),
        );
      }
      if (team) {
        // The team's hash (issue 29): its spend per period in billing.team_spend, loaded like a key's.
        tasks.push(
          (async () => {
            const rows = await teamSpendFrom(deps.db, team.teamId, current);
            await deps.spend.loadTeam(
              team,
              atMs,
              current,
              rows.map((r) => [r.period, toUnits(r.amount)]),
            );
          })(),
        );
      }
      await Promise.all(tasks);
    },
  };
}
