import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';

let t: TestKeysService;
beforeAll(async () => {
  t = await startTestKeysService();
});
afterAll(async () => {
  await t?.close();
});

describe('POST /internal/keys/owners', () => {
  it("answers each key's account, state, limit and its team's budget (billing's threshold alerts)", async () => {
    const team = await t.service.runtime.teams.create(t.account.id, {
      name: 'alerts team',
      limit: '12.5',
      limitReset: 'monthly',
    });
    const limited = await t.createKey(t.account.id, { limit: '7.25', limitReset: 'weekly' });
    const member = await t.createKey(t.account.id);
    await t.service.runtime.keys.update(t.account.id, member.id, { governance: { teamId: team.id } });
    const res = await api(t, 'POST', '/internal/keys/owners', {
      token: await t.serviceToken('billing'),
      body: { ids: [limited.id, member.id] },
    });
    expectStatus(res, 200);
    const byId = new Map(res.body.data.map((k: { id: string }) => [k.id, k]));
    expect(byId.get(limited.id)).toMatchObject({
      accountId: t.account.id,
      limit: '7.25',
      limitReset: 'weekly',
      teamId: null,
      teamLimit: null,
    });
    expect(byId.get(member.id)).toMatchObject({
      limit: null,
      teamId: team.id,
      teamLimit: '12.5',
      teamLimitReset: 'monthly',
    });
  });

  it('answers one id (its own statement) as it answers many, and nothing for an unknown id', async () => {
    const key = await t.createKey(t.account.id, { limit: '3', limitReset: 'daily' });
    const ask = async (ids: string[]) => {
      const res = await api(t, 'POST', '/internal/keys/owners', {
        token: await t.serviceToken('billing'),
        body: { ids },
      });
      expectStatus(res, 200);
      return res.body.data as Array<{ id: string }>;
    };
    // Past five executions Postgres may switch the statement to its generic plan: same answers.
    for (let i = 0; i < 7; i++) {
      expect(await ask([key.id])).toEqual([
        expect.objectContaining({ id: key.id, accountId: t.account.id, limit: '3', limitReset: 'daily' }),
      ]);
      expect(await ask(['00000000-0000-4000-8000-000000000000'])).toEqual([]);
    }
    expect(await ask([key.id, key.id])).toHaveLength(1);
  });
});
