import type { SettleArgs } from './store-types';

/** Members (request × hash) per settle script call. */
export const SETTLE_CHUNK = 256;

/**
 * One settle script call (lua/settle.lua): its hashes then its token-rate counters, ARGV, and the
 * request ids of each hash group.
 */
export interface SettleCall {
  keys: string[];
  args: string[];
  /** Per hash (in KEYS order): the request ids settled on it, to map the script's failed indexes back. */
  groups: Array<Set<string>>;
}

/**
 * Plans the settle script calls of a list of settles: one call per `SETTLE_CHUNK` members (a member:
 * one request on one hash), members grouped by hash. A request settled twice in one list goes to the
 * next call, so the second sees the first. ARGV: the hash TTL, the number of hashes, then per hash its
 * member count and `requestId, cost, expires` per member, then per token-rate counter (KEYS after the
 * hashes) the tokens given back, summed over the call's members (issue 29). Settles holding nothing
 * and giving nothing back are skipped; a negative cost settles as 0.
 */
export function planSettleCalls(
  list: readonly SettleArgs[],
  opts: {
    pendingTtlMs: number;
    hashTtlSeconds: number;
    keyHash: (id: string) => string;
    accountHash: (id: string) => string;
    teamHash: (accountId: string, teamId: string) => string;
  },
): SettleCall[] {
  const calls: SettleCall[] = [];
  let groups = new Map<string, { ids: Set<string>; args: string[] }>();
  let refunds = new Map<string, number>();
  let members = 0;
  const flush = () => {
    if (members === 0 && refunds.size === 0) return;
    const args: string[] = [String(opts.hashTtlSeconds), String(groups.size)];
    const sent = [...groups.values()];
    for (const g of sent) args.push(String(g.ids.size), ...g.args);
    for (const tokens of refunds.values()) args.push(String(tokens));
    calls.push({ keys: [...groups.keys(), ...refunds.keys()], args, groups: sent.map((g) => g.ids) });
    groups = new Map();
    refunds = new Map();
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
    const refund = s.tokenRefund && s.tokenRefund.tokens > 0 ? s.tokenRefund : undefined;
    if (!s.keyTracked && !s.accountTracked && !s.team && !refund) continue;
    const cost = (s.costUnits < 0n ? 0n : s.costUnits).toString();
    const expires = String(s.now + opts.pendingTtlMs);
    if (s.keyTracked) member(opts.keyHash(s.keyId), s, cost, expires);
    if (s.team) member(opts.teamHash(s.accountId, s.team.teamId), s, cost, expires);
    if (s.accountTracked) member(opts.accountHash(s.accountId), s, cost, expires);
    for (const counter of refund?.counterKeys ?? [])
      refunds.set(counter, (refunds.get(counter) ?? 0) + Math.ceil(refund?.tokens ?? 0));
    if (members + refunds.size >= SETTLE_CHUNK) flush();
  }
  flush();
  return calls;
}

/** The request ids of a settle call's reply: the 1-based indexes of the hash groups it could not write. */
export function failedSettles(call: SettleCall, failedGroups: readonly number[]): string[] {
  return failedGroups.flatMap((i) => [...(call.groups[i - 1] ?? [])]);
}
