import type { SettleArgs } from './store-types';

/** Members (request × hash) per settle script call. */
export const SETTLE_CHUNK = 256;

/** One settle script call (lua/settle.lua): its hashes, ARGV, and the request ids of each hash group. */
export interface SettleCall {
  keys: string[];
  args: string[];
  /** Per hash (in KEYS order): the request ids settled on it, to map the script's failed indexes back. */
  groups: Array<Set<string>>;
}

/**
 * Plans the settle script calls of a list of settles: one call per `SETTLE_CHUNK` members (a member:
 * one request on one hash), members grouped by hash. A request settled twice in one list goes to the
 * next call, so the second sees the first. ARGV: the hash TTL, then per hash its member count and
 * `requestId, cost, expires` per member. Settles holding nothing (neither tracked) are skipped; a
 * negative cost settles as 0.
 */
export function planSettleCalls(
  list: readonly SettleArgs[],
  opts: {
    pendingTtlMs: number;
    hashTtlSeconds: number;
    keyHash: (id: string) => string;
    accountHash: (id: string) => string;
  },
): SettleCall[] {
  const calls: SettleCall[] = [];
  let groups = new Map<string, { ids: Set<string>; args: string[] }>();
  let members = 0;
  const flush = () => {
    if (members === 0) return;
    const args: string[] = [String(opts.hashTtlSeconds)];
    const sent = [...groups.values()];
    for (const g of sent) args.push(String(g.ids.size), ...g.args);
    calls.push({ keys: [...groups.keys()], args, groups: sent.map((g) => g.ids) });
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
    const expires = String(s.now + opts.pendingTtlMs);
    if (s.keyTracked) member(opts.keyHash(s.keyId), s, cost, expires);
    if (s.accountTracked) member(opts.accountHash(s.accountId), s, cost, expires);
    if (members >= SETTLE_CHUNK) flush();
  }
  flush();
  return calls;
}

/** The request ids of a settle call's reply: the 1-based indexes of the hash groups it could not write. */
export function failedSettles(call: SettleCall, failedGroups: readonly number[]): string[] {
  return failedGroups.flatMap((i) => [...(call.groups[i - 1] ?? [])]);
}
