import type { CommittedAccount, CommittedKey } from './store-types';

/** Request ids per commit script call (its fields are read with one HMGET, below Lua's unpack limit). */
export const COMMIT_CHUNK = 1000;

/** One commit script call (lua/commit.lua) on one hash. */
export interface CommitCall {
  hash: string;
  args: Array<string | number>;
}

/**
 * The commit script calls of one billing commit: per key and per account, one call per `COMMIT_CHUNK`
 * request ids (at least one, to raise the counters when no request is listed). Each chunk carries the
 * whole commit's totals (a monotonic max: applying it again is harmless). ARGV: now, tombstone TTL,
 * hash TTL, the number of (field, total) pairs, the pairs, then the request ids.
 */
export function planCommitCalls(
  keys: readonly CommittedKey[],
  accounts: readonly CommittedAccount[],
  opts: {
    now: number;
    tombstoneTtlMs: number;
    hashTtlSeconds: number;
    keyHash: (id: string) => string;
    accountHash: (id: string) => string;
    teamHash: (accountId: string, teamId: string) => string;
  },
): CommitCall[] {
  const head = [opts.now, opts.tombstoneTtlMs, opts.hashTtlSeconds];
  const calls: CommitCall[] = [];
  for (const k of keys) {
    const pairs = k.totals.flatMap(([p, u]) => [p, u.toString()]);
    // A team (issue 29) is committed like a key, on its own hash.
    const hash = k.teamOfAccount ? opts.teamHash(k.teamOfAccount, k.keyId) : opts.keyHash(k.keyId);
    for (const ids of chunks(k.requestIds))
      calls.push({ hash, args: [...head, k.totals.length, ...pairs, ...ids] });
  }
  for (const a of accounts) {
    for (const ids of chunks(a.requestIds))
      calls.push({
        hash: opts.accountHash(a.accountId),
        args: [...head, 1, 'usage', a.usageUnits.toString(), ...ids],
      });
  }
  return calls;
}

function chunks(ids: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += COMMIT_CHUNK) out.push(ids.slice(i, i + COMMIT_CHUNK));
  return out.length > 0 ? out : [[]];
}
