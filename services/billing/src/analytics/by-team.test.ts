import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keyHeaders,
  registerTestKey,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';

/** Issue 29: spend per team in `GET /activity?group_by=team` (the daily roll-ups mapped to each key's team). */
let s: TestBillingStack;
const now = new Date('2026-11-20T12:30:00.000Z');
const account = randomUUID();
const team = randomUUID();
const [k1, k2, loner] = [randomUUID(), randomUUID(), randomUUID()];

beforeAll(async () => {
  s = await startTestBilling({}, { clock: () => now });
  registerTestKey({ keyId: k1, accountId: account, teamId: team });
  registerTestKey({ keyId: k2, accountId: account, teamId: team });
  registerTestKey({ keyId: loner, accountId: account });
  const at = '2026-11-19T08:00:00.000Z';
  const ev = (key_id: string, cost: string) =>
    usageEvent({
      account_id: account,
      key_id,
      team_id: key_id === loner ? null : team,
      cost,
      finished_at: at,
    });
  await s.billing.recorder.record([ev(k1, '0.1'), ev(k2, '0.2000000001'), ev(k1, '0.3'), ev(loner, '0.05')]);
});
afterAll(async () => {
  await s.cleanup();
});

async function activity(query: string) {
  const headers = await keyHeaders({ keyId: randomUUID(), accountId: account, scope: 'management' });
  const res = await fetch(`${s.billing.url}/activity${query}`, { headers });
  return { status: res.status, body: (await res.json()) as { data: Array<Record<string, unknown>> } };
}

describe('GET /activity?group_by=team', () => {
  it("sums the team's keys into one row per day, model and provider, exactly, with team_id (null = no team)", async () => {
    const r = await activity('?group_by=team');
    expect(r.status).toBe(200);
    expect(r.body.data.map((x) => [x.date, x.team_id, x.usage, x.requests])).toEqual([
      ['2026-11-19', team, 0.6000000001, 3],
      ['2026-11-19', null, 0.05, 1],
    ]);
    // Without group_by: OpenRouter's shape, no team_id.
    const plain = await activity('');
    expect(plain.body.data).toHaveLength(1);
    expect(plain.body.data[0]).not.toHaveProperty('team_id');
    expect((await activity('?group_by=key')).status).toBe(400);
  });
});
