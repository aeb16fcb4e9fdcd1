import { randomUUID } from 'node:crypto';
import { periodKey, toUnits } from '@tollgate/money';
import { createSpendStore, spendTeamHash } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';
import { createSpendService } from '../spend/spend.service';

/** Issue 29: billing keeps team spend per period (billing.team_spend) and brings the team's Redis hash up to it. */
let s: TestBillingStack;
beforeAll(async () => {
  s = await startTestBilling();
  await s.billing.consumer?.close(); // the recorder is driven directly here
});
afterAll(async () => {
  await s.cleanup();
});

const teamSpend = async (teamId: string) =>
  Object.fromEntries(
    (
      await s.billing.db
        .selectFrom('billing.team_spend')
        .select(['period', 'amount', 'account_id'])
        .where('team_id', '=', teamId)
        .execute()
    ).map((r) => [r.period, toUnits(r.amount)]),
  );

describe('team spend in the usage recorder', () => {
  it("sums the events' costs per team and period exactly once, across keys, and ignores events without a team", async () => {
    const accountId = randomUUID();
    const teamId = randomUUID();
    const at = '2026-11-20T12:00:00.000Z';
    const ev = (keyId: string, cost: string, team: string | null = teamId) =>
      usageEvent({
        account_id: accountId,
        key_id: keyId,
        team_id: team,
        cost,
        started_at: at,
        finished_at: at,
      });
    const [k1, k2] = [randomUUID(), randomUUID()];
    const batch = [ev(k1, '0.1'), ev(k2, '0.25'), ev(k1, '0.0000000001'), ev(k2, '7', null)];
    expect((await s.billing.recorder.record(batch)).inserted).toBe(4);
    // Redelivered: nothing added.
    expect((await s.billing.recorder.record(batch)).inserted).toBe(0);
    const day = new Date(at);
    const total = toUnits('0.3500000001');
    expect(await teamSpend(teamId)).toEqual({
      [periodKey('daily', day)]: total,
      [periodKey('weekly', day)]: total,
      [periodKey('monthly', day)]: total,
      all: total,
    });
  });

  it("raises the team's Redis hash to the committed totals and clears the batch's pending costs", async () => {
    const accountId = randomUUID();
    const teamId = randomUUID();
    const keyId = randomUUID();
    const now = new Date();
    const month = periodKey('monthly', now);
    const store = createSpendStore(s.redis.client, { prefix: s.redis.prefix });
    const current = { d: periodKey('daily', now), w: periodKey('weekly', now), m: month };
    await store.beginRebuild({ team: { accountId, teamId } }, now.getTime());
    await store.loadTeam({ accountId, teamId }, now.getTime(), current, []);
    const e = usageEvent({
      account_id: accountId,
      key_id: keyId,
      team_id: teamId,
      cost: '0.5',
      started_at: now.toISOString(),
      finished_at: now.toISOString(),
    });
    // What settle leaves: the request's cost pending on the team's hash until billing counts it.
    const hash = spendTeamHash(s.redis.prefix, accountId, teamId);
    await s.redis.client.hset(
      hash,
      `p:${e.id}`,
      `${toUnits('0.5')}|${now.getTime() + 60_000}`,
      '_held',
      String(toUnits('0.5')),
    );
    await s.billing.recorder.record([e]);
    expect(await s.redis.client.hget(hash, month)).toBe(String(toUnits('0.5')));
    expect(await s.redis.client.hget(hash, `p:${e.id}`)).toBeNull();
    expect(await s.redis.client.hget(hash, '_held')).toBe('0');
  });

  it("rebuilds a team's hash from billing.team_spend (what POST /internal/spend/rebuild with team_id runs)", async () => {
    const accountId = randomUUID();
    const teamId = randomUUID();
    const now = new Date();
    const month = periodKey('monthly', now);
    await s.billing.recorder.record([
      usageEvent({
        account_id: accountId,
        key_id: randomUUID(),
        team_id: teamId,
        cost: '1.25',
        started_at: now.toISOString(),
        finished_at: now.toISOString(),
      }),
    ]);
    const hash = spendTeamHash(s.redis.prefix, accountId, teamId);
    await s.redis.client.del(hash);
    const store = createSpendStore(s.redis.client, { prefix: s.redis.prefix });
    const service = createSpendService({ db: s.billing.db, spend: store, clock: () => now });
    await service.rebuild({ accountId, keyId: null, teamId }, now);
    expect(await s.redis.client.hget(hash, month)).toBe(String(toUnits('1.25')));
    expect(await s.redis.client.hget(hash, '_ok')).not.toBeNull();
  });
});
