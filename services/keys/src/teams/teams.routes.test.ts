import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus, proxyLookup } from '../../test/test-client';
import { startTestKeysService, type TestAccount, type TestKeysService } from '../../test/testing';

let t: TestKeysService;

beforeAll(async () => {
  t = await startTestKeysService();
});
afterAll(async () => {
  await t?.close();
});

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

async function createTeam(account: TestAccount, name = 'platform') {
  const res = await api(t, 'POST', '/teams', { as: account.managementKey, body: { name } });
  expectStatus(res, 201);
  return res.body.data as { id: string; name: string; key_count: number };
}

describe('/teams', () => {
  it('creates, lists, reads, renames and deletes a team of the caller account', async () => {
    const acct = await t.createAccount();
    const team = await createTeam(acct, '  Search  ');
    expect(team).toMatchObject({ name: 'Search', key_count: 0 });
    const list = await api(t, 'GET', '/teams', { as: acct.managementKey });
    expectStatus(list, 200);
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([team.id]);
    const patched = await api(t, 'PATCH', `/teams/${team.id}`, {
      as: acct.managementKey,
      body: { name: 'Ads' },
    });
    expectStatus(patched, 200);
    expect(patched.body.data.name).toBe('Ads');
    expect((await api(t, 'GET', `/teams/${team.id}`, { as: acct.managementKey })).body.data.name).toBe('Ads');
    const del = await api(t, 'DELETE', `/teams/${team.id}`, { as: acct.managementKey });
    expect(del.body).toEqual({ data: { id: team.id, deleted: true } });
    expectError(await api(t, 'GET', `/teams/${team.id}`, { as: acct.managementKey }), 404, 'not_found');
  });

  it("answers 404 for another account's team on every route and never lists it", async () => {
    const a = await t.createAccount();
    const b = await t.createAccount();
    const team = await createTeam(a);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'x' }], ['DELETE']] as const) {
      expectError(await api(t, method, `/teams/${team.id}`, { as: b.managementKey, body }), 404, 'not_found');
    }
    expect((await api(t, 'GET', '/teams', { as: b.managementKey })).body.data).toEqual([]);
    expect((await api(t, 'GET', `/teams/${team.id}`, { as: a.managementKey })).body.data.name).toBe(
      'platform',
    );
  });

  it('refuses inference keys with 403 and bad input with 400 naming the field', async () => {
    const acct = await t.createAccount();
    const inference = await t.createKey(acct.id);
    expectError(await api(t, 'GET', '/teams', { as: inference }), 403, 'forbidden');
    expectError(
      await api(t, 'POST', '/teams', { as: acct.managementKey, body: { name: '' } }),
      400,
      'bad_request',
      /name/,
    );
    expectError(
      await api(t, 'POST', '/teams', { as: acct.managementKey, body: { name: 'x', limit: -1 } }),
      400,
      'bad_request',
      /limit/,
    );
    expectError(await api(t, 'GET', '/teams/nope', { as: acct.managementKey }), 400, 'bad_request', /id/);
    expectError(await api(t, 'GET', `/teams/${UNKNOWN}`, { as: acct.managementKey }), 404, 'not_found');
    expectError(await api(t, 'POST', '/teams', { as: null, body: { name: 'x' } }), 401, 'unauthorized');
  });
});

describe('team budgets', () => {
  it('creates and changes a team limit, its reset period and its tokens-per-minute limit', async () => {
    const acct = await t.createAccount();
    const res = await api(t, 'POST', '/teams', {
      as: acct.managementKey,
      body: { name: 'search', limit: 12.5, limit_reset: 'weekly', rate_limit_tpm: 5000 },
    });
    expectStatus(res, 201);
    expect(res.body.data).toMatchObject({ limit: 12.5, limit_reset: 'weekly', rate_limit_tpm: 5000 });
    const id = res.body.data.id;
    const patched = await api(t, 'PATCH', `/teams/${id}`, {
      as: acct.managementKey,
      body: { limit: null, limit_reset: 'daily' },
    });
    expectStatus(patched, 200);
    expect(patched.body.data).toMatchObject({ limit: null, limit_reset: 'daily', rate_limit_tpm: 5000 });
    const plain = await createTeam(acct, 'plain');
    expect(plain).toMatchObject({ limit: null, limit_reset: null, rate_limit_tpm: null });
  });

  it('refuses bad budgets with 400 naming the field', async () => {
    const acct = await t.createAccount();
    const team = await createTeam(acct);
    for (const [body, field] of [
      [{ limit: 'ten' }, /limit/],
      [{ limit: 1e12 }, /limit/],
      [{ limit: 0.00000000001 }, /limit/],
      [{ limit_reset: 'hourly' }, /limit_reset/],
      [{ rate_limit_tpm: 0 }, /rate_limit_tpm/],
      [{ rate_limit_tpm: 1.5 }, /rate_limit_tpm/],
    ] as const) {
      expectError(
        await api(t, 'PATCH', `/teams/${team.id}`, { as: acct.managementKey, body }),
        400,
        'bad_request',
        field,
      );
    }
  });

  it("carries the team's budget in each key's record, and a budget change reaches the records at once", async () => {
    const acct = await t.createAccount();
    const res = await api(t, 'POST', '/teams', {
      as: acct.managementKey,
      body: { name: 'ads', limit: 3, limit_reset: 'monthly', rate_limit_tpm: 900 },
    });
    const team = res.body.data as { id: string };
    const created = await api(t, 'POST', '/keys', {
      as: acct.managementKey,
      body: { name: 'k', team_id: team.id },
    });
    expect(await proxyLookup(t, created.body.key)).toMatchObject({
      teamId: team.id,
      teamLimit: '3',
      teamLimitReset: 'monthly',
      teamRateLimitTpm: 900,
    });
    const before = (await proxyLookup(t, created.body.key)) as { version: number };
    expectStatus(
      await api(t, 'PATCH', `/teams/${team.id}`, {
        as: acct.managementKey,
        body: { limit: 0.25, rate_limit_tpm: null },
      }),
      200,
    );
    const after = (await proxyLookup(t, created.body.key)) as { version: number };
    expect(after).toMatchObject({ teamLimit: '0.25', teamLimitReset: 'monthly', teamRateLimitTpm: null });
    expect(after.version).toBeGreaterThan(before.version);
    // A rename changes no key record.
    await api(t, 'PATCH', `/teams/${team.id}`, { as: acct.managementKey, body: { name: 'ads 2' } });
    expect(((await proxyLookup(t, created.body.key)) as { version: number }).version).toBe(after.version);
    // Leaving the team drops its budget from the record.
    await api(t, 'PATCH', `/keys/${created.body.data.hash}`, {
      as: acct.managementKey,
      body: { team_id: null },
    });
    const left = await proxyLookup(t, created.body.key);
    expect(left?.teamId).toBeNull();
    expect(left?.teamLimit).toBeUndefined();
  });
});

describe('team_id of keys', () => {
  it('puts a key in a team on create and PATCH, and the key-cache record carries the team id', async () => {
    const acct = await t.createAccount();
    const team = await createTeam(acct);
    const other = await createTeam(acct, 'other');
    const created = await api(t, 'POST', '/keys', {
      as: acct.managementKey,
      body: { name: 'k', team_id: team.id },
    });
    expectStatus(created, 201);
    expect(created.body.data.team_id).toBe(team.id);
    expect(await proxyLookup(t, created.body.key)).toMatchObject({ teamId: team.id });
    expect((await api(t, 'GET', `/teams/${team.id}`, { as: acct.managementKey })).body.data.key_count).toBe(
      1,
    );

    const hash = created.body.data.hash;
    const moved = await api(t, 'PATCH', `/keys/${hash}`, {
      as: acct.managementKey,
      body: { team_id: other.id },
    });
    expectStatus(moved, 200);
    expect(moved.body.data.team_id).toBe(other.id);
    expect(await proxyLookup(t, created.body.key)).toMatchObject({ teamId: other.id });
    const left = await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: { team_id: null } });
    expect(left.body.data.team_id).toBeNull();
    expect(await proxyLookup(t, created.body.key)).toMatchObject({ teamId: null });
  });

  it("refuses another account's team, an unknown team and a management key with 400 team_id", async () => {
    const a = await t.createAccount();
    const b = await t.createAccount();
    const foreign = await createTeam(b);
    for (const team_id of [foreign.id, UNKNOWN]) {
      expectError(
        await api(t, 'POST', '/keys', { as: a.managementKey, body: { name: 'k', team_id } }),
        400,
        'bad_request',
        /team_id/,
      );
    }
    const key = await t.createKey(a.id);
    expectError(
      await api(t, 'PATCH', `/keys/${key.id}`, { as: a.managementKey, body: { team_id: foreign.id } }),
      400,
      'bad_request',
      /team_id/,
    );
    const mine = await createTeam(a);
    expectError(
      await api(t, 'PATCH', `/keys/${a.managementKey.id}`, {
        as: a.managementKey,
        body: { team_id: mine.id },
      }),
      400,
      'bad_request',
      /management keys/,
    );
    expectError(
      await api(t, 'POST', '/keys', { as: a.managementKey, body: { name: 'k', team_id: 'x' } }),
      400,
      'bad_request',
      /team_id/,
    );
  });

  it('refuses to delete a team with live keys (409); revoked keys do not block it', async () => {
    const acct = await t.createAccount();
    const team = await createTeam(acct);
    const created = await api(t, 'POST', '/keys', {
      as: acct.managementKey,
      body: { name: 'k', team_id: team.id },
    });
    expectError(
      await api(t, 'DELETE', `/teams/${team.id}`, { as: acct.managementKey }),
      409,
      'conflict',
      /1 key/,
    );
    expectStatus(await api(t, 'DELETE', `/keys/${created.body.data.hash}`, { as: acct.managementKey }), 200);
    expectStatus(await api(t, 'DELETE', `/teams/${team.id}`, { as: acct.managementKey }), 200);
    const revoked = await api(t, 'GET', `/keys/${created.body.data.hash}`, { as: acct.managementKey });
    expect(revoked.body.data.team_id).toBeNull();
  });
});
