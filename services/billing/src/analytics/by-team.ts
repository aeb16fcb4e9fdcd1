import { toDecimal, toUnits } from '@tollgate/money';
import type { KeyOwners } from '../keys/key-owners';
import type { ActivityRow, UsageRow } from './analytics.repository';

/** Each key's current team (null: none), asked of the keys service (`owners.current`) once. */
async function teamsOfKeys(
  keyIds: Array<string | null | undefined>,
  owners: Pick<KeyOwners, 'current'>,
): Promise<(keyId: string | null | undefined) => string | null> {
  const ids = [...new Set(keyIds.filter((k): k is string => Boolean(k)))];
  const teamOf = new Map((await owners.current(ids)).map((o) => [o.id, o.teamId ?? null]));
  return (keyId) => teamOf.get(keyId ?? '') ?? null;
}

const add = (a: string, b: string) => String(BigInt(a) + BigInt(b));
const COUNTS = ['requests', 'tokens_prompt', 'tokens_completion', 'tokens_reasoning'] as const;

/**
 * `/activity` grouped by team (issue 29): the daily roll-ups are per key, so rows read per key are
 * mapped to each key's team through the keys service (`owners.current`: a key's current team; its
 * whole history counts there) and summed per (date, model, provider, team). `team_id` null = keys
 * without a team. Cost sums are exact (units). Newest day first, then by cost.
 */
export async function activityByTeam(
  rows: readonly ActivityRow[],
  owners: Pick<KeyOwners, 'current'>,
): Promise<Array<Omit<ActivityRow, 'key_id' | 'cost'> & { team_id: string | null; cost: bigint }>> {
  const teamOf = await teamsOfKeys(
    rows.map((r) => r.key_id),
    owners,
  );
  const out = new Map<
    string,
    Omit<ActivityRow, 'key_id' | 'cost'> & { team_id: string | null; cost: bigint }
  >();
  for (const r of rows) {
    const team = teamOf(r.key_id);
    const id = `${r.date}|${r.model}|${r.provider_name}|${team ?? ''}`;
    const cur = out.get(id);
    if (!cur) {
      const { key_id: _, cost, ...rest } = r;
      out.set(id, { ...rest, team_id: team, cost: toUnits(cost) });
      continue;
    }
    for (const c of COUNTS) cur[c] = add(cur[c], r[c]);
    cur.cost += toUnits(r.cost);
  }
  return [...out.values()].sort((a, b) =>
    a.date !== b.date ? (a.date < b.date ? 1 : -1) : a.cost === b.cost ? 0 : a.cost < b.cost ? 1 : -1,
  );
}

/**
 * The usage analytics grouped by team (the dashboard's `group_by=team`): rows read grouped by key
 * are summed per (bucket, the key's current team), as for `/activity` above; `group` is the team id,
 * null for keys without a team. Every team is answered (an account has few): no ranking, no pages.
 */
export async function usageByTeam(
  rows: readonly UsageRow[],
  owners: Pick<KeyOwners, 'current'>,
): Promise<UsageRow[]> {
  const teamOf = await teamsOfKeys(
    rows.map((r) => r.group),
    owners,
  );
  const out = new Map<string, UsageRow>();
  for (const r of rows) {
    const team = teamOf(r.group);
    const id = `${r.bucket?.toISOString() ?? ''}|${team ?? ''}`;
    const cur = out.get(id);
    if (!cur) {
      out.set(id, { ...r, group: team });
      continue;
    }
    for (const c of [...COUNTS, 'tokens_cached', 'tokens_cache_write'] as const) cur[c] = add(cur[c], r[c]);
    cur.cost = toDecimal(toUnits(cur.cost) + toUnits(r.cost));
  }
  return [...out.values()];
}
