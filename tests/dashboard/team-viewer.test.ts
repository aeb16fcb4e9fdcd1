/**
 * Team members and the team viewer's scope (issue 29): an owner makes a user a team viewer (role
 * `member`) of one team; that user then sees only the team's keys, its usage only by one of those
 * keys, and nothing account-wide — another team's key by id is refused (403), server-side. The
 * membership change is audited once, as the owner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardSession, startTestDashboard, type TestDashboard } from '../support/dashboard';
import { describeResponse, type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let owner: DashboardSession;
let member: DashboardSession;
let memberId: string;
let teamA: string;
let teamB: string;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  stack = await startStack();
  dash = await startTestDashboard(stack);
  owner = await dash.signIn(await dash.createUser(stack.account.id, 'owner'));
  const viewer = await dash.createUser(stack.account.id, 'viewer');
  member = await dash.signIn(viewer);
  memberId = (await member.call('GET', '/api/me')).body.data.user.id;
  const team = async (name: string) => {
    const r = await stack.api('/teams', { key: stack.account.managementKey, body: { name } });
    expect(r.status, describeResponse(r)).toBe(201);
    return r.body.data.id as string;
  };
  teamA = await team('team a');
  teamB = await team('team b');
  const key = async (name: string, team_id: string) => {
    const r = await owner.call('POST', '/api/keys', { name, team_id });
    expect(r.status, r.text).toBe(201);
    return r.body.data.hash as string;
  };
  keyA = await key('a key', teamA);
  keyB = await key('b key', teamB);
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

describe('team viewers', () => {
  it('an owner makes a viewer a team viewer of team A (audited once, as the owner)', async () => {
    expect((await member.call('PUT', `/api/users/${memberId}/teams`, { team_ids: [teamA] })).status).toBe(
      403,
    );
    const unknown = await owner.call('PUT', `/api/users/${memberId}/teams`, {
      team_ids: ['00000000-0000-4000-8000-000000000000'],
    });
    expect(unknown.status).toBe(400);
    for (let i = 0; i < 2; i++) {
      const put = await owner.call('PUT', `/api/users/${memberId}/teams`, { team_ids: [teamA] });
      expect(put.status, put.text).toBe(200);
    }
    expect((await owner.call('PATCH', `/api/users/${memberId}`, { role: 'member' })).status).toBe(204);
    const users = await owner.call('GET', '/api/users');
    expect(users.body.data.find((u: { id: string }) => u.id === memberId)).toMatchObject({
      role: 'member',
      team_ids: [teamA],
    });
    const audit = await owner.call('GET', '/api/audit?source=dashboard');
    const changes = (
      audit.body.data as Array<{ action: string; target: { id: string }; actor: { id: string } }>
    ).filter((e) => e.target.id === memberId && e.action === 'user.teams');
    expect(changes).toHaveLength(1);
  });

  it("sees only team A's keys and usage; team B's key by id is refused", async () => {
    const keys = await member.call('GET', '/api/keys?include_revoked=true');
    expect(keys.status, keys.text).toBe(200);
    expect((keys.body.data as Array<{ hash: string }>).map((k) => k.hash)).toEqual([keyA]);
    const teams = await member.call('GET', '/api/teams');
    expect((teams.body.data as Array<{ id: string }>).map((t) => t.id)).toEqual([teamA]);

    const day = new Date().toISOString().slice(0, 10);
    const range = `from=${day}T00:00:00Z&to=${day}T23:00:00Z`;
    const usage = await member.call('GET', `/api/usage?key_id=${keyA}&${range}`);
    expect(usage.status, usage.text).toBe(200);
    expect((await member.call('GET', `/api/generations?key_id=${keyA}`)).status).toBe(200);
    for (const path of [
      `/api/usage?key_id=${keyB}&${range}`,
      `/api/latency?key_id=${keyB}`,
      `/api/generations?key_id=${keyB}`,
      `/api/usage?key_id=${stack.inferenceKeyId}`,
      '/api/usage',
      '/api/overview',
      '/api/credits',
      '/api/audit',
      '/api/users',
      '/api/sessions',
      `/api/generations/gen-1`,
    ]) {
      const r = await member.call('GET', path);
      expect([path, r.status]).toEqual([path, 403]);
      expect(r.body.error.metadata.reason).toBe('team_scope');
    }
    // A viewer of the whole account still sees every key.
    const all = await owner.call('GET', '/api/keys');
    expect((all.body.data as Array<{ hash: string }>).map((k) => k.hash)).toEqual(
      expect.arrayContaining([keyA, keyB, stack.inferenceKeyId]),
    );
    // And a team viewer changes nothing.
    expect((await member.call('POST', '/api/keys', { name: 'nope', team_id: teamA })).status).toBe(403);
    expect((await member.call('POST', '/api/teams', { name: 'nope' })).status).toBe(403);
    expect((await member.call('PATCH', `/api/teams/${teamA}`, { limit: 1 })).status).toBe(403);
    expect((await member.call('DELETE', `/api/teams/${teamA}`)).status).toBe(403);
  });

  it('an owner creates a team with its budget, changes it, moves a key in and deletes it (audited as the owner)', async () => {
    const ownerId = (await owner.call('GET', '/api/me')).body.data.user.id as string;
    const created = await owner.call('POST', '/api/teams', {
      name: 'research',
      limit: 12.5,
      limit_reset: 'weekly',
      rate_limit_tpm: 900,
    });
    expect(created.status, created.text).toBe(201);
    const team = created.body.data;
    expect(team).toMatchObject({ name: 'research', limit: 12.5, limit_reset: 'weekly', rate_limit_tpm: 900 });
    // The keys service validates: its 400 names the field.
    const bad = await owner.call('PATCH', `/api/teams/${team.id}`, { limit_reset: 'hourly' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/limit_reset/);
    expect((await owner.call('POST', '/api/teams', { limit: 1 })).status).toBe(400);
    expect((await owner.call('PATCH', '/api/teams/not-a-uuid', { limit: 1 })).status).toBe(400);
    const missing = await owner.call('PATCH', '/api/teams/00000000-0000-4000-8000-000000000000', {
      limit: 1,
    });
    expect(missing.status).toBe(404);
    const changed = await owner.call('PATCH', `/api/teams/${team.id}`, { name: 'research 2', limit: null });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({ name: 'research 2', limit: null, limit_reset: 'weekly' });
    // A key moves into the team from the dashboard; the team cannot go while the key is in it.
    const moved = await owner.call('PATCH', `/api/keys/${keyB}`, { team_id: team.id });
    expect(moved.status, moved.text).toBe(200);
    const listed = await owner.call('GET', '/api/teams');
    expect(listed.body.data.find((t: { id: string }) => t.id === team.id)).toMatchObject({ key_count: 1 });
    expect((await owner.call('DELETE', `/api/teams/${team.id}`)).status).toBe(409);
    expect((await owner.call('PATCH', `/api/keys/${keyB}`, { team_id: teamB })).status).toBe(200);
    const deleted = await owner.call('DELETE', `/api/teams/${team.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.data).toEqual({ id: team.id, deleted: true });
    const audit = await owner.call('GET', '/api/audit?source=keys');
    const entries = (
      audit.body.data as Array<{
        action: string;
        target: { id: string };
        actor: { kind: string; id: string };
      }>
    ).filter((e) => e.target.id === team.id);
    expect(entries.map((e) => [e.action, e.actor.kind, e.actor.id]).reverse()).toEqual([
      ['team.create', 'user', ownerId],
      ['team.update', 'user', ownerId],
      ['team.delete', 'user', ownerId],
    ]);
  });
});
