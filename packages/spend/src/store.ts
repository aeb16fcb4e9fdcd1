import type { RedisClient } from '@tollgate/redis';
import { scripts } from './scripts';

/** Redis key of a key's spend hash and of an account's hash. Everything lives under the prefix. */
export const spendKeyHash = (prefix: string, keyId: string) => `${prefix}spend:key:${keyId}`;
/** The key's tokens-per-minute counter of the minute holding `nowMs` (a fixed one-minute window). */
export const spendTokenRateKey = (prefix: string, keyId: string, nowMs: number) =>
  `${prefix}spend:tpm:${keyId}:${Math.floor(nowMs / 60_000)}`;
export const spendAccountHash = (prefix: string, accountId: string) => `${prefix}spend:acct:${accountId}`;

export interface SpendTimings {
  /**
   * Lease of an admit reservation: the proxy renews it every `leaseRenewMs` while the request lives,
   * so a crashed proxy's holds lapse within this (plus one sweep). Default 10 s.
   */
  reservationTtlMs: number;
  /** How often a proxy renews the leases of its live reservations (one Redis call for all). Default 3 s. */
  leaseRenewMs: number;
  /**
   * How long a settled cost is held while the billing worker has not counted it. Billing removes it
   * when it commits the request, so this only bounds a hold whose event can never be billed
   * (dead-lettered); it must outlast any billing outage. Default 7 days.
   */
  pendingTtlMs: number;
  /** How long the worker's "already counted" tombstone waits for a late settle. Default 15 min. */
  tombstoneTtlMs: number;
  /** A key hash older than this is refreshed from Postgres in the background (prunes old periods). */
  keyRefreshMs: number;
  /** An account hash older than this is refreshed from Postgres in the background. */
  accountRefreshMs: number;
  /**
   * How long the proxy's guard lets a settle wait for others to share its script call (one call per
   * batch instead of one per request; settle is off the request path). Default 5 ms, like the usage
   * publisher's linger. 0 = the settles of one event-loop turn.
   */
  settleLingerMs: number;
  /** Sweep interval for expired holds (runs inside admit). Default 2 s. */
  gcIntervalMs: number;
  /** Idle hashes expire after this (then they are rebuilt on next use). */
  hashTtlSeconds: number;
}

export const defaultTimings: SpendTimings = {
  reservationTtlMs: 10_000,
  leaseRenewMs: 3_000,
  pendingTtlMs: 7 * 86_400_000,
  tombstoneTtlMs: 15 * 60_000,
  keyRefreshMs: 5 * 60_000,
  accountRefreshMs: 5 * 60_000,
  settleLingerMs: 5,
  gcIntervalMs: 2_000,
  hashTtlSeconds: 35 * 86_400,
};

/** A live reservation whose lease a proxy renews: the owner hashes it holds on and its amount. */
export interface Lease {
  keyId: string;
  accountId: string;
  requestId: string;
  keyTracked: boolean;
  accountTracked: boolean;
  units: bigint;
  /** The key's limit (units) and the period field it was admitted in, to re-check a lapsed lease. */
  limitUnits?: bigint | null;
  period?: string;
}

/** What a renewal found: how many holds it renewed, and lapsed leases that no longer fit. */
interface RenewResult {
  renewed: number;
  /** Leases held again after they lapsed that put their key or account over its limit: stop them. */
  overLimit: Lease[];
}

/**
 * `expiredPending`: settled costs (p: holds) this admission's sweeps dropped after `pendingTtlMs`
 * without billing having counted them — usage that never reached billing (e.g. dead-lettered).
 */
export type AdmitOutcome =
  | {
      code: 'admitted';
      keyTracked: boolean;
      accountTracked: boolean;
      staleKey: boolean;
      staleAccount: boolean;
      expiredPending: number;
    }
  | { code: 'key_limit'; staleKey: boolean; staleAccount: boolean; expiredPending: number }
  | { code: 'credits'; staleKey: boolean; staleAccount: boolean; expiredPending: number }
  /**
   * A hash is missing or unbuilt (`_ok` absent: never loaded, or a lapsed reservation was swept —
   * its counters may be short of Postgres): rebuild it from Postgres, then admit again.
   */
  | { code: 'rebuild'; key: boolean; account: boolean; expiredPending: number }
  /** With a `check`: the key's cached record changed (or is pending); nothing counted or held. */
  | { code: 'stale' }
  /** With a `check`: the request is over the key's rate limit (counted, nothing held). */
  | { code: 'rate_limited' }
  /** With a `tokenRate`: this minute's tokens plus the request's worst case exceed the limit (nothing charged or held). */
  | { code: 'token_rate_limited' };

/**
 * The proxy's checked admission (docs/architecture.md, "Round trips"): the key-cache record check and
 * the rate-limit count folded into the admission script, so a request whose key record the proxy
 * already holds costs one round trip before the provider instead of two.
 */
export interface AdmitCheck {
  /** The key-cache record hash (`KeyCache.redisKey`) and the version of the caller's copy. */
  recordKey: string;
  version: number;
  /** The key's rate-limit window counter and its TTL (`KeyCache.rateWindow`). */
  counterKey: string;
  counterTtlMs: number;
  /** Requests allowed in the window; null = no rate limit (the request is still counted). */
  rateLimit: number | null;
}

export interface AdmitArgs {
  keyId: string;
  accountId: string;
  requestId: string;
  worstCaseUnits: bigint;
  /** Limit in units, or null when the key has no limit. */
  limitUnits: bigint | null;
  /** Period field of the key's current limit period (`periodKey(limitReset, now)`). */
  period: string;
  now: number;
  /** Verify the caller's key record and count the request first (code `stale` / `rate_limited`). */
  check?: AdmitCheck;
  /** The key's tokens-per-minute limit: charged with `tokens` when admitted (code `token_rate_limited` when over). */
  tokenRate?: TokenRateCharge;
}

/** A tokens-per-minute charge (issue 29): the key's counter of the current minute. */
interface TokenRateCharge {
  /** `tokenRateKey(keyId, now)`. */
  counterKey: string;
  limit: number;
  /** The request's worst-case tokens (prompt bound + output budget). */
  tokens: number;
  counterTtlMs: number;
}

export interface SettleArgs {
  keyId: string;
  accountId: string;
  requestId: string;
  costUnits: bigint;
  keyTracked: boolean;
  accountTracked: boolean;
  now: number;
}

/** What the billing worker committed for one key or account, as Postgres totals after the commit. */
export interface CommittedKey {
  keyId: string;
  /** period -> total spend in Postgres (units), read inside or after the committing transaction. */
  totals: Array<[period: string, units: bigint]>;
  requestIds: string[];
}
export interface CommittedAccount {
  accountId: string;
  usageUnits: bigint;
  requestIds: string[];
}

export interface AccountState {
  usageUnits: bigint;
  creditsUnits: bigint;
  postpaid: boolean;
  /** account_settings.version in Postgres; settings in Redis only move forward. */
  version: number;
}

/** Typed access to the spend layout; used by the guard (proxy side) and by billing (worker, rebuild). */
export interface SpendStore {
  /** With a `check`, `count` is the request's number in its key's rate-limit window (0 when stale). */
  admit(args: AdmitArgs): Promise<AdmitOutcome & { count?: number }>;
  settle(args: SettleArgs): Promise<void>;
  /**
   * Settles many requests in one script call (per `SETTLE_CHUNK` members): each exactly as `settle`
   * alone, applied in list order. Each member is applied at most once; should a call fail (Redis
   * gone), the members it did not apply keep their reservations until the lease lapses, exactly as
   * a failed single settle does. Resolves with the request ids of members whose hash is not a hash
   * (nothing written for them; every other member was settled).
   */
  settleMany(list: readonly SettleArgs[]): Promise<Set<string>>;
  /** Renews the leases of live reservations (one script call); returns how many were still held. */
  renew(now: number, leases: Iterable<Lease>): Promise<RenewResult>;
  /** Billing worker, after commit: raise counters to the committed totals, clear holds of the batch. */
  applyCommitted(now: number, keys: CommittedKey[], accounts: CommittedAccount[]): Promise<void>;
  /** Rebuild step 1: placeholder so worker updates racing with the Postgres read are not lost. */
  beginRebuild(target: { keyId?: string; accountId?: string }, at: number): Promise<void>;
  /** Rebuild step 2 for a key: totals of the current (and later) periods, read after beginRebuild. */
  loadKey(
    keyId: string,
    at: number,
    current: { d: string; w: string; m: string },
    totals: Array<[string, bigint]>,
  ): Promise<void>;
  /** Rebuild step 2 for an account. */
  loadAccount(accountId: string, at: number, state: AccountState): Promise<void>;
  /** After a committed credits/postpaid change (ignored when the hash is missing or newer). */
  updateAccountSettings(accountId: string, state: Omit<AccountState, 'usageUnits'>): Promise<void>;
}

/** Owner entries (lease × hash) per renewal script call. */
const RENEW_CHUNK = 1000;
/** Members (request × hash) per settle script call. */
const SETTLE_CHUNK = 256;
/** Request ids per commit script call (its fields are read with one HMGET, below Lua's unpack limit). */
const COMMIT_CHUNK = 1000;

export function createSpendStore(
  redis: RedisClient,
  options: { prefix: string; timings?: Partial<SpendTimings> },
): SpendStore {
  const t = { ...defaultTimings, ...options.timings };
  const keyHash = (id: string) => spendKeyHash(options.prefix, id);
  const acctHash = (id: string) => spendAccountHash(options.prefix, id);

  const settleMany = async (list: readonly SettleArgs[]): Promise<Set<string>> => {
    // One script call per SETTLE_CHUNK members (a member: one request on one hash), grouped by hash;
    // a request settled twice in one list goes to the next call, so the second sees the first.
    const calls: Array<Promise<string[]>> = [];
    let groups = new Map<string, { ids: Set<string>; args: string[] }>();
    let members = 0;
    const flush = () => {
      if (members === 0) return;
      const args: string[] = [String(t.hashTtlSeconds)];
      const sent = [...groups.values()];
      for (const g of sent) args.push(String(g.ids.size), ...g.args);
      calls.push(
        scripts.settle
          .run(redis, [...groups.keys()], args)
          .then((failed) => (failed as number[]).flatMap((i) => [...(sent[i - 1]?.ids ?? [])])),
      );
      groups = new Map();
      members = 0;
    };
    const member = (hash: string, s: SettleArgs, cost: string, expires: string) => {
      let g = groups.get(hash);
      if (g?.ids.has(s.requestId)) {
        flush();
        g = undefined;
      }
      if (!g) {
        g = { ids: new Set(), args: [] };
        groups.set(hash, g);
      }
      g.ids.add(s.requestId);
      g.args.push(s.requestId, cost, expires);
      members++;
    };
    for (const s of list) {
      if (!s.keyTracked && !s.accountTracked) continue;
      const cost = (s.costUnits < 0n ? 0n : s.costUnits).toString();
      const expires = String(s.now + t.pendingTtlMs);
      if (s.keyTracked) member(keyHash(s.keyId), s, cost, expires);
      if (s.accountTracked) member(acctHash(s.accountId), s, cost, expires);
      if (members >= SETTLE_CHUNK) flush();
    }
    flush();
    return new Set((await Promise.all(calls)).flat());
  };

  return {
    async admit(a) {
      const c = a.check;
      const keys = [keyHash(a.keyId), acctHash(a.accountId)];
      if (c) keys.push(c.recordKey, c.counterKey);
      const tr = a.tokenRate;
      if (tr) keys.push(tr.counterKey);
      const r = (await scripts.admit.run(redis, keys, [
        a.now,
        a.requestId,
        a.worstCaseUnits.toString(),
        a.limitUnits === null ? '' : a.limitUnits.toString(),
        a.period,
        t.reservationTtlMs,
        t.keyRefreshMs,
        t.accountRefreshMs,
        t.gcIntervalMs,
        t.hashTtlSeconds,
        ...(c
          ? [c.version, c.counterTtlMs, c.rateLimit === null ? '' : c.rateLimit]
          : tr
            ? ['', '', '']
            : []),
        ...(tr ? [tr.limit, tr.tokens, tr.counterTtlMs] : []),
      ])) as number[];
      const outcome = admitOutcome(r);
      return c ? Object.assign(outcome, { count: Number(r[6] ?? 0) }) : outcome;
    },

    async settle(s) {
      if ((await settleMany([s])).size > 0) throw new Error(`spend hash of ${s.requestId} is not a hash`);
    },
    settleMany,

    async renew(now, leases) {
      // Chunked: one script call per RENEW_CHUNK owner entries. A single call carrying every lease
      // of a busy process (5 arguments per entry) overflows the call stack when the arguments are
      // spread into the command (found by bench/compare at ~6,500 open streams: the proxy crashed).
      // Each entry is renewed on its own, so chunks change nothing else.
      let renewed = 0;
      const overLimit = new Set<Lease>();
      let keys: string[] = [];
      let args: string[] = [];
      let owners: Lease[] = [];
      const flush = async () => {
        if (keys.length === 0) return;
        const [count, ...over] = (await scripts.renew.run(redis, keys, [
          now,
          t.reservationTtlMs,
          t.hashTtlSeconds,
          ...args,
        ])) as number[];
        renewed += count ?? 0;
        for (const i of over) overLimit.add(owners[i - 1] as Lease);
        keys = [];
        args = [];
        owners = [];
      };
      for (const l of leases) {
        const units = (l.units < 0n ? 0n : l.units).toString();
        if (l.keyTracked) {
          keys.push(keyHash(l.keyId));
          const limit = l.limitUnits === undefined || l.limitUnits === null ? '' : l.limitUnits.toString();
          args.push(l.requestId, units, 'k', `${limit}|${l.period ?? ''}`);
          owners.push(l);
        }
        if (l.accountTracked) {
          keys.push(acctHash(l.accountId));
          args.push(l.requestId, units, 'a', '');
          owners.push(l);
        }
        if (keys.length >= RENEW_CHUNK) await flush();
      }
      await flush();
      return { renewed, overLimit: [...overLimit] };
    },

    async applyCommitted(now, keys, accounts) {
      const calls: Array<Promise<unknown>> = [];
      // Each chunk is a whole commit of the same totals (a monotonic max: applying it again is harmless).
      const chunks = (ids: string[]) => {
        const out: string[][] = [];
        for (let i = 0; i < ids.length; i += COMMIT_CHUNK) out.push(ids.slice(i, i + COMMIT_CHUNK));
        return out.length > 0 ? out : [[]];
      };
      for (const k of keys) {
        const pairs = k.totals.flatMap(([p, u]) => [p, u.toString()]);
        for (const ids of chunks(k.requestIds))
          calls.push(
            scripts.commit.run(
              redis,
              [keyHash(k.keyId)],
              [now, t.tombstoneTtlMs, t.hashTtlSeconds, k.totals.length, ...pairs, ...ids],
            ),
          );
      }
      for (const a of accounts) {
        for (const ids of chunks(a.requestIds))
          calls.push(
            scripts.commit.run(
              redis,
              [acctHash(a.accountId)],
              [now, t.tombstoneTtlMs, t.hashTtlSeconds, 1, 'usage', a.usageUnits.toString(), ...ids],
            ),
          );
      }
      await Promise.all(calls);
    },

    async beginRebuild(target, at) {
      const calls: Array<Promise<unknown>> = [];
      if (target.keyId)
        calls.push(scripts.beginRebuild.run(redis, [keyHash(target.keyId)], [at, t.hashTtlSeconds]));
      if (target.accountId)
        calls.push(scripts.beginRebuild.run(redis, [acctHash(target.accountId)], [at, t.hashTtlSeconds]));
      await Promise.all(calls);
    },

    async loadKey(keyId, at, current, totals) {
      await scripts.loadKey.run(
        redis,
        [keyHash(keyId)],
        [
          at,
          t.hashTtlSeconds,
          current.d,
          current.w,
          current.m,
          totals.length,
          ...totals.flatMap(([p, u]) => [p, u.toString()]),
        ],
      );
    },

    async loadAccount(accountId, at, s) {
      await scripts.account.run(
        redis,
        [acctHash(accountId)],
        [
          'load',
          at,
          t.hashTtlSeconds,
          s.usageUnits.toString(),
          s.creditsUnits.toString(),
          s.postpaid ? 1 : 0,
          s.version,
        ],
      );
    },

    async updateAccountSettings(accountId, s) {
      await scripts.account.run(
        redis,
        [acctHash(accountId)],
        ['settings', 0, t.hashTtlSeconds, '0', s.creditsUnits.toString(), s.postpaid ? 1 : 0, s.version],
      );
    },
  };
}

function admitOutcome(r: number[]): AdmitOutcome {
  const [code, k, acc, f1, f2, expired] = r;
  const expiredPending = expired ?? 0;
  switch (code) {
    case 4:
      return { code: 'stale' };
    case 5:
      return { code: 'rate_limited' };
    case 6:
      return { code: 'token_rate_limited' };
    case 0:
      return {
        code: 'admitted',
        keyTracked: k === 1,
        accountTracked: acc === 1,
        staleKey: f1 === 1,
        staleAccount: f2 === 1,
        expiredPending,
      };
    case 1:
      return { code: 'key_limit', staleKey: f1 === 1, staleAccount: f2 === 1, expiredPending };
    case 2:
      return { code: 'credits', staleKey: f1 === 1, staleAccount: f2 === 1, expiredPending };
    default:
      return { code: 'rebuild', key: f1 === 1, account: f2 === 1, expiredPending };
  }
}

/** A key's committed spend per period field (`d…`, `w…`, `m…`, `all`), in units. */
export type CommittedKeySpend = Map<string, bigint>;

/**
 * Read-only: the committed spend of keys as the billing worker last wrote it to their key hashes
 * (each field is a Postgres total after a commit, raised monotonically; see COMMIT and LOAD_KEY), for
 * the given period fields. One round trip (HMGET, pipelined for several keys). A key whose hash is
 * missing or was never built from Postgres (`_ok` absent: no limited request since the hash expired,
 * or a rebuild under way for a new hash) maps to null: the caller must ask billing (Postgres) instead.
 * A built hash with no field for a period means nothing was committed in it (the first commit of a
 * period writes its field). Throws when Redis does not answer.
 */
export async function readCommittedKeySpend(
  redis: RedisClient,
  prefix: string,
  keyIds: readonly string[],
  periods: readonly string[],
): Promise<Map<string, CommittedKeySpend | null>> {
  const out = new Map<string, CommittedKeySpend | null>();
  if (keyIds.length === 0) return out;
  const fields = ['_ok', ...periods];
  let rows: Array<Array<string | null>>;
  if (keyIds.length === 1) {
    rows = [await redis.hmget(spendKeyHash(prefix, keyIds[0] as string), ...fields)];
  } else {
    const pipeline = redis.pipeline();
    for (const id of keyIds) pipeline.hmget(spendKeyHash(prefix, id), ...fields);
    const results = (await pipeline.exec()) ?? [];
    rows = results.map(([err, v]) => {
      if (err) throw err;
      return v as Array<string | null>;
    });
  }
  keyIds.forEach((id, i) => {
    const row = rows[i];
    if (!row || row[0] === null || row[0] === undefined) {
      out.set(id, null);
      return;
    }
    const spend: CommittedKeySpend = new Map();
    periods.forEach((p, j) => {
      const v = row[j + 1];
      spend.set(p, v && /^\d+$/.test(v) ? BigInt(v) : 0n);
    });
    out.set(id, spend);
  });
  return out;
}
