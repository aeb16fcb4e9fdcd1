import type { RedisClient } from '@tollgate/redis';
import { admitCall, admitResult } from './admit-call';
import { planCommitCalls } from './commit-calls';
import { spendAccountHash, spendKeyHash, spendTeamHash } from './keys';
import { renewCalls } from './renew-calls';
import { scripts } from './scripts';
import { failedSettles, planSettleCalls } from './settle-calls';
import type { Lease, SettleArgs, SpendStore } from './store-types';
import { defaultTimings, type SpendTimings } from './timings';

export { type CommittedKeySpend, readCommittedKeySpend } from './committed-key-spend';
export {
  spendAccountHash,
  spendKeyHash,
  spendTeamHash,
  spendTeamTokenRateKey,
  spendTokenRateKey,
} from './keys';
export type {
  AccountState,
  AdmitArgs,
  AdmitCheck,
  AdmitOutcome,
  CommittedAccount,
  CommittedKey,
  Lease,
  SettleArgs,
  SpendStore,
} from './store-types';
export { defaultTimings, type SpendTimings } from './timings';

/**
 * Typed access to the spend layout (store-types.ts): each method is one script of lua/ (scripts.ts)
 * called with the KEYS and ARGV its planner builds (admit-call.ts, settle-calls.ts, renew-calls.ts,
 * commit-calls.ts).
 */
export function createSpendStore(
  redis: RedisClient,
  options: { prefix: string; timings?: Partial<SpendTimings> },
): SpendStore {
  const t = { ...defaultTimings, ...options.timings };
  const keyHash = (id: string) => spendKeyHash(options.prefix, id);
  const accountHash = (id: string) => spendAccountHash(options.prefix, id);
  const teamHash = (accountId: string, teamId: string) => spendTeamHash(options.prefix, accountId, teamId);
  const hashes = { keyHash, accountHash, teamHash };

  const settleMany = async (list: readonly SettleArgs[]): Promise<Set<string>> => {
    const calls = planSettleCalls(list, { ...t, ...hashes }).map((call) =>
      scripts.settle
        .run(redis, call.keys, call.args)
        .then((failed) => failedSettles(call, failed as number[])),
    );
    return new Set((await Promise.all(calls)).flat());
  };

  return {
    async admit(a) {
      const team = a.team ? teamHash(a.accountId, a.team.teamId) : undefined;
      const call = admitCall(a, { key: keyHash(a.keyId), account: accountHash(a.accountId), team }, t);
      return admitResult(
        (await scripts.admit.run(redis, call.keys, call.args)) as number[],
        a.check !== undefined,
      );
    },

    async settle(s) {
      if ((await settleMany([s])).size > 0) throw new Error(`spend hash of ${s.requestId} is not a hash`);
    },
    settleMany,

    async renew(now, leases) {
      let renewed = 0;
      const overLimit = new Set<Lease>();
      const overTeam = new Set<Lease>();
      for (const call of renewCalls(leases, hashes)) {
        const [count, ...over] = (await scripts.renew.run(redis, call.keys, [
          now,
          t.reservationTtlMs,
          t.hashTtlSeconds,
          ...call.args,
        ])) as number[];
        renewed += count ?? 0;
        for (const i of over) {
          overLimit.add(call.owners[i - 1] as Lease);
          if (call.teams[i - 1]) overTeam.add(call.owners[i - 1] as Lease);
        }
      }
      return { renewed, overLimit: [...overLimit], overTeam };
    },

    async applyCommitted(now, keys, accounts) {
      const calls = planCommitCalls(keys, accounts, { ...t, now, ...hashes });
      await Promise.all(calls.map((c) => scripts.commit.run(redis, [c.hash], c.args)));
    },

    async beginRebuild(target, at) {
      const calls: Array<Promise<unknown>> = [];
      if (target.keyId)
        calls.push(scripts.beginRebuild.run(redis, [keyHash(target.keyId)], [at, t.hashTtlSeconds]));
      if (target.accountId)
        calls.push(scripts.beginRebuild.run(redis, [accountHash(target.accountId)], [at, t.hashTtlSeconds]));
      if (target.team) {
        const hash = teamHash(target.team.accountId, target.team.teamId);
        calls.push(scripts.beginRebuild.run(redis, [hash], [at, t.hashTtlSeconds]));
      }
      await Promise.all(calls);
    },

    async loadTeam(team, at, current, totals) {
      // A team's hash has a key's layout (period fields): the key's load script.
      const pairs = totals.flatMap(([p, u]) => [p, u.toString()]);
      await scripts.loadKey.run(
        redis,
        [teamHash(team.accountId, team.teamId)],
        [at, t.hashTtlSeconds, current.d, current.w, current.m, totals.length, ...pairs],
      );
    },

    async loadKey(keyId, at, current, totals) {
      const pairs = totals.flatMap(([p, u]) => [p, u.toString()]);
      await scripts.loadKey.run(
        redis,
        [keyHash(keyId)],
        [at, t.hashTtlSeconds, current.d, current.w, current.m, totals.length, ...pairs],
      );
    },

    async loadAccount(accountId, at, s) {
      const state = [s.usageUnits.toString(), s.creditsUnits.toString(), s.postpaid ? 1 : 0, s.version];
      await scripts.account.run(redis, [accountHash(accountId)], ['load', at, t.hashTtlSeconds, ...state]);
    },

    async updateAccountSettings(accountId, s) {
      const state = ['0', s.creditsUnits.toString(), s.postpaid ? 1 : 0, s.version];
      await scripts.account.run(redis, [accountHash(accountId)], ['settings', 0, t.hashTtlSeconds, ...state]);
    },
  };
}
