import type { Lease } from './store-types';

/** Owner entries (lease × hash) per renewal script call. */
export const RENEW_CHUNK = 1000;

/** One renewal script call (lua/renew.lua): the hashes, 4 ARGV per entry, and the lease of each entry. */
export interface RenewCall {
  keys: string[];
  args: string[];
  owners: Lease[];
  /** Per entry: whether it is the lease's team hash (a team over its limit: the team's refusal). */
  teams: boolean[];
}

/**
 * The renewal script calls of a set of leases, one per `RENEW_CHUNK` owner entries (an entry: one lease
 * on one hash; ARGV `requestId, units, 'k'|'t'|'a', '<limit>|<period>'` for a key or a team, `''` for
 * an account).
 * A single call carrying every lease of a busy process overflows the call stack when the arguments are
 * spread into the command (found by bench/compare at ~6,500 open streams: the proxy crashed). Each
 * entry is renewed on its own, so chunks change nothing else.
 *
 * Lazy: a chunk is built from `leases` only when the caller asks for it, after the previous call was
 * answered, so a lease settled (removed from a live map being iterated) meanwhile is not renewed.
 */
export function* renewCalls(
  leases: Iterable<Lease>,
  hashes: {
    keyHash: (id: string) => string;
    accountHash: (id: string) => string;
    teamHash: (accountId: string, teamId: string) => string;
  },
): Generator<RenewCall> {
  let call: RenewCall = { keys: [], args: [], owners: [], teams: [] };
  for (const l of leases) {
    const units = (l.units < 0n ? 0n : l.units).toString();
    if (l.keyTracked) {
      call.keys.push(hashes.keyHash(l.keyId));
      const limit = l.limitUnits === undefined || l.limitUnits === null ? '' : l.limitUnits.toString();
      call.args.push(l.requestId, units, 'k', `${limit}|${l.period ?? ''}`);
      call.owners.push(l);
      call.teams.push(false);
    }
    if (l.team) {
      call.keys.push(hashes.teamHash(l.accountId, l.team.teamId));
      call.args.push(l.requestId, units, 't', `${l.team.limitUnits}|${l.team.period}`);
      call.owners.push(l);
      call.teams.push(true);
    }
    if (l.accountTracked) {
      call.keys.push(hashes.accountHash(l.accountId));
      call.args.push(l.requestId, units, 'a', '');
      call.owners.push(l);
      call.teams.push(false);
    }
    if (call.keys.length >= RENEW_CHUNK) {
      yield call;
      call = { keys: [], args: [], owners: [], teams: [] };
    }
  }
  if (call.keys.length > 0) yield call;
}
