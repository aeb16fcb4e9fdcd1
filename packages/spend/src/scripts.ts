import { createHash } from 'node:crypto';
import type { RedisClient } from '@tollgate/redis';
import { loadLua } from './lua';

/**
 * The Lua scripts of the spend layout (see README.md for the design), one file each in
 * packages/spend/lua/, read once at start-up (lua.ts). Every amount is a
 * non-negative integer count of money units (1e-10 USD) written as a decimal string; the scripts
 * never do arithmetic on amounts in Lua numbers, so stored values stay exact int64s.
 *
 * Amounts are added, subtracted and compared as decimal strings (`add`, `sub`, `gt`), and `_held` is
 * written as the exact string sum (not HINCRBY, which is bounded by int64 ≈ 922 million USD), so
 * admission is exact at any amount; Lua numbers (doubles) are only used for timestamps.
 *
 * Owner hash fields (one hash per key, one per account):
 *   _ok      epoch ms the hash was (re)built from Postgres; absent = unknown, must be rebuilt
 *   _rb      a rebuild is under way (placeholder written before Postgres is read)
 *   _held    sum of the amounts of live r:/p: fields
 *   _gc      epoch ms of the next sweep for expired holds
 *   r:<req>  "<units>|<expires ms>" reservation made by admit (worst case); a short lease the proxy
 *            renews while the request lives (RENEW), so a crashed proxy's holds lapse within seconds
 *   p:<req>  "<units>|<expires ms>" pending cost left by settle until the worker counts it
 *   t:<req>  "0|<expires ms>" tombstone: the worker counted <req> before the proxy settled it
 *   key hash:     <period> (d2026-11-20, w2026-W47, m2026-11, all) -> committed spend
 *   account hash: usage, credits, postpaid (0/1), _v (settings version in Postgres)
 */

class Script {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: RedisClient, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).includes('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

export const scripts = {
  admit: new Script(loadLua('admit')),
  settle: new Script(loadLua('settle')),
  renew: new Script(loadLua('renew')),
  commit: new Script(loadLua('commit')),
  beginRebuild: new Script(loadLua('begin-rebuild')),
  loadKey: new Script(loadLua('load-key')),
  account: new Script(loadLua('account')),
} as const;
