import type { Logger } from '@tollgate/logger';
import { toDecimal, toUnits } from '@tollgate/money';
import type { SpendStore } from '@tollgate/spend';
import { currentPostpaid, recordAdminChange } from '../audit/audit';
import type { BillingDb } from '../database';
import { bumpSettings, creditBalance, creditTotal, insertCredit } from './credits.repository';

export interface CreditsService {
  /** Appends to the ledger; returns the new credit total (decimal USD). */
  addCredits(accountId: string, amountUnits: bigint, note: string | null): Promise<{ totalCredits: string }>;
  setPostpaid(accountId: string, postpaid: boolean): Promise<{ postpaid: boolean }>;
  /** Credits granted and spend recorded, exact. */
  balance(accountId: string): Promise<{ totalCredits: bigint; totalUsage: bigint }>;
}

/**
 * Credits and postpaid live in Postgres; after each committed change the account's Redis hash gets
 * the new state, guarded by the settings version so an older write never overwrites a newer one.
 */
export function createCreditsService(deps: {
  db: BillingDb;
  spend: SpendStore;
  logger: Logger;
}): CreditsService {
  const publish = async (
    accountId: string,
    s: { creditsUnits: bigint; postpaid: boolean; version: number },
  ) => {
    // Best effort: a missed write is fixed by the guard's periodic account refresh (minutes).
    await deps.spend.updateAccountSettings(accountId, s).catch((err: unknown) => {
      deps.logger.warn({ err, accountId }, 'account settings not pushed to Redis; the guard refreshes them');
    });
  };

  return {
    async addCredits(accountId, amountUnits, note) {
      const result = await deps.db.transaction().execute(async (trx) => {
        const settings = await bumpSettings(trx, accountId); // row lock: concurrent adds serialise here
        const before = await creditTotal(trx, accountId);
        await insertCredit(trx, accountId, toDecimal(amountUnits), note);
        const total = toUnits(await creditTotal(trx, accountId));
        await recordAdminChange(trx, {
          accountId,
          action: 'credits.grant',
          before: { total_credits: toDecimal(toUnits(before)) },
          after: { total_credits: toDecimal(total), amount: toDecimal(amountUnits), note },
        });
        return { total, postpaid: settings.postpaid, version: Number(settings.version) };
      });
      await publish(accountId, {
        creditsUnits: result.total,
        postpaid: result.postpaid,
        version: result.version,
      });
      return { totalCredits: toDecimal(result.total) };
    },

    async setPostpaid(accountId, postpaid) {
      const result = await deps.db.transaction().execute(async (trx) => {
        const was = await currentPostpaid(trx, accountId);
        const settings = await bumpSettings(trx, accountId, postpaid);
        if (was !== settings.postpaid) {
          await recordAdminChange(trx, {
            accountId,
            action: 'settings.postpaid',
            before: { postpaid: was },
            after: { postpaid: settings.postpaid },
          });
        }
        const total = toUnits(await creditTotal(trx, accountId));
        return { total, postpaid: settings.postpaid, version: Number(settings.version) };
      });
      await publish(accountId, {
        creditsUnits: result.total,
        postpaid: result.postpaid,
        version: result.version,
      });
      return { postpaid: result.postpaid };
    },

    async balance(accountId) {
      const { credits, usage } = await creditBalance(deps.db, accountId);
      return { totalCredits: toUnits(credits), totalUsage: toUnits(usage) };
    },
  };
}
