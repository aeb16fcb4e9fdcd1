import { toUnits } from '@tollgate/money';
import type { KeyOwners } from '../keys/key-owners';
import type { ActivityRow } from './analytics.repository';

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
  const keyIds = [...new Set(rows.map((r) => r.key_id).filter((k): k is string => Boolean(k)))];
  const teamOf = new Map((await owners.current(keyIds)).map((o) => [o.id, o.teamId ?? null]));
  const out = new Map<
    string,
    Omit<ActivityRow, 'key_id' | 'cost'> & { team_id: string | null; cost: bigint }
  >();
  for (const r of rows) {
    const team = teamOf.get(r.key_id ?? '') ?? null;
    const id = `${r.date}|${r.model}|${r.provider_name}|${team ?? ''}`;
    const cur = out.get(id);
    const add = (a: string, b: string) => String(BigInt(a) + BigInt(b));
    if (!cur) {
      const { key_id: _, cost, ...rest } = r;
      out.set(id, { ...rest, team_id: team, cost: toUnits(cost) });
      continue;
    }
    cur.requests = add(cur.requests, r.requests);
    cur.tokens_prompt = add(cur.tokens_prompt, r.tokens_prompt);
    cur.tokens_completion = add(cur.tokens_completion, r.tokens_completion);
    cur.tokens_reasoning = add(cur.tokens_reasoning, r.tokens_reasoning);
    cur.cost += toUnits(r.cost);
  }
  return [...out.values()].sort((a, b) =>
    a.date !== b.date ? (a.date < b.date ? 1 : -1) : a.cost === b.cost ? 0 : a.cost < b.cost ? 1 : -1,
  );
}
