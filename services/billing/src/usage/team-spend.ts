import type { UsageEventV1 } from '@tollgate/events';
import { toDecimal, toUnits } from '@tollgate/money';
import type { CommittedKey } from '@tollgate/spend';
import { dayOf } from '../analytics/usage-rollup';

type TeamRow = { team_id: string; account_id: string; period: string; amount: string };

/**
 * A batch's team spend (issue 29): per (team, period) of the events' UTC days, the newly inserted
 * units (events with a `team_id`), like the key spend. `spend` are the increments of
 * `billing.team_spend` (sorted: the same lock order in every worker), `read` the pairs the batch
 * touched without adding to them (duplicates, zero costs: their totals are read so Redis is brought
 * up to date for them too), and `committed` turns the totals after the increment into the Redis
 * updates (the team's hash, in its account's slot).
 */
export function teamBatch(
  events: readonly UsageEventV1[],
  inserted: ReadonlySet<string>,
  units: readonly bigint[],
  periodsOf: (day: string) => string[],
) {
  const deltas = new Map<string, { teamId: string; accountId: string; period: string; units: bigint }>();
  const touched = new Map<string, { teamId: string; accountId: string; period: string }>();
  const requestIds = new Map<string, { accountId: string; ids: string[] }>();
  events.forEach((e, i) => {
    const teamId = e.team_id;
    if (!teamId) return;
    let r = requestIds.get(teamId);
    if (!r) {
      r = { accountId: e.account_id, ids: [] };
      requestIds.set(teamId, r);
    }
    r.ids.push(e.id);
    const u = inserted.has(e.id) ? (units[i] as bigint) : 0n;
    for (const period of periodsOf(dayOf(e.finished_at))) {
      const id = `${teamId}|${period}`;
      touched.set(id, { teamId, accountId: e.account_id, period });
      if (u === 0n) continue;
      const d = deltas.get(id);
      if (d) d.units += u;
      else deltas.set(id, { teamId, accountId: e.account_id, period, units: u });
    }
  });
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const spend: TeamRow[] = [...deltas.values()]
    .sort((a, b) => (a.teamId === b.teamId ? cmp(a.period, b.period) : cmp(a.teamId, b.teamId)))
    .map((d) => ({
      team_id: d.teamId,
      account_id: d.accountId,
      period: d.period,
      amount: toDecimal(d.units),
    }));
  const read = [...touched.entries()]
    .filter(([id]) => !deltas.has(id))
    .map(([, p]) => ({ team_id: p.teamId, period: p.period }));
  const committed = (totals: ReadonlyArray<{ team_id: string; period: string; amount: string }>) => {
    const byPair = new Map(totals.map((t) => [`${t.team_id}|${t.period}`, toUnits(t.amount)]));
    const out = new Map<string, CommittedKey>();
    for (const [teamId, r] of requestIds)
      out.set(teamId, { keyId: teamId, teamOfAccount: r.accountId, totals: [], requestIds: r.ids });
    for (const [id, p] of touched) out.get(p.teamId)?.totals.push([p.period, byPair.get(id) ?? 0n]);
    return [...out.values()];
  };
  return { spend, read, committed };
}
