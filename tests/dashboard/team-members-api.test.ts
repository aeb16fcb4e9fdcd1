/**
 * A team's members through the management API (issue 29): `GET`/`POST /teams/{id}/members` and
 * `DELETE /teams/{id}/members/{user_id}` with a management key, through the proxy. The keys service
 * owns the teams, the dashboard owns its users and their memberships: keys checks the team and asks
 * the dashboard (its internal routes, keys' service token, the acting key named). A membership made
 * this way is the one the dashboard enforces (a team viewer sees the team's keys, and stops seeing
 * them once removed), and each change is audited once, as `user.teams` by the management key with the
 * client's address, in the merged `GET /audit`.
 */
import { createServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DashboardSession,
  startTestDashboard,
  type TestDashboard,
  type TestUser,
} from '../support/dashboard';
import { describeResponse, type Stack, type StackAccount, startStack } from '../support/stack';

const CLIENT = '198.51.100.23';
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

let stack: Stack;
let dash: TestDashboard;
let owner: DashboardSession;
let viewer: TestUser;
let viewerId: string;
let team: string;
let teamKey: string;

const api = (path: string, method = 'GET', body?: unknown, key = stack.account.managementKey) =>
  stack.api(path, { key, method, body, headers: { 'x-forwarded-for': CLIENT } });

interface Entry {
  action: string;
  actor: { kind: string; id: string | null };
  client_address: string | null;
  target: { kind: string; id: string };
  before: { teams?: string[] } | null;
  after: { teams?: string[] } | null;
}

beforeAll(async () => {
  // `dashboard`: keys knows the dashboard's address (DASHBOARD_URL), as in production.
  stack = await startStack({ dashboard: true, proxyEnv: { TRUSTED_PROXIES: '1' } });
  dash = await startTestDashboard(stack);
  owner = await dash.signIn(await dash.createUser(stack.account.id, 'owner'));
  viewer = await dash.createUser(stack.account.id, 'viewer');
  const users = (await owner.call('GET', '/api/users')).body.data as Array<{ id: string; email: string }>;
  viewerId = users.find((u) => u.email === viewer.email)!.id;
  // A team viewer (role member) sees only their teams' keys.
  expect((await owner.call('PATCH', `/api/users/${viewerId}`, { role: 'member' })).status).toBe(204);
  const created = await api('/teams', 'POST', { name: 'search' });
  expect(created.status, describeResponse(created)).toBe(201);
  team = created.body.data.id;
  const key = await api('/keys', 'POST', { name: 'search key', team_id: team });
  expect(key.status, describeResponse(key)).toBe(201);
  teamKey = key.body.data.hash;
}, 120_000);

afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

describe('/teams/{id}/members', () => {
  it('adds a dashboard user by email, then by id again (no change), lists them, removes them', async () => {
    expect((await api(`/teams/${team}/members`)).body).toEqual({ data: [] });
    const added = await api(`/teams/${team}/members`, 'POST', { email: `  ${viewer.email.toUpperCase()} ` });
    expect(added.status, describeResponse(added)).toBe(201);
    expect(added.body.data).toMatchObject({
      id: viewerId,
      email: viewer.email,
      display_name: 'Test viewer',
      role: 'member',
    });
    expect(Number.isNaN(Date.parse(added.body.data.added_at))).toBe(false);
    const again = await api(`/teams/${team}/members`, 'POST', { user_id: viewerId.toUpperCase() });
    expect(again.status, describeResponse(again)).toBe(200);
    expect(again.body.data).toEqual(added.body.data);
    const listed = await api(`/teams/${team}/members`);
    expect(listed.status, describeResponse(listed)).toBe(200);
    expect(listed.body).toEqual({ data: [added.body.data] });
    // The dashboard's own views agree (one table, one owner).
    const teams = await owner.call('GET', '/api/teams');
    expect(teams.body.data.find((t: { id: string }) => t.id === team).member_ids).toEqual([viewerId]);
  });

  it("the membership is the one the dashboard enforces: the team viewer sees the team's key, then nothing", async () => {
    const session = await dash.signIn(viewer);
    const keys = async () =>
      ((await session.call('GET', '/api/keys')).body.data as Array<{ hash: string }>).map((k) => k.hash);
    expect(await keys()).toEqual([teamKey]);
    const removed = await api(`/teams/${team}/members/${viewerId}`, 'DELETE');
    expect(removed.status, describeResponse(removed)).toBe(200);
    expect(removed.body).toEqual({ data: { id: viewerId, deleted: true } });
    expect(await keys()).toEqual([]);
    expect((await api(`/teams/${team}/members`)).body).toEqual({ data: [] });
    const twice = await api(`/teams/${team}/members/${viewerId}`, 'DELETE');
    expect(twice.status, describeResponse(twice)).toBe(404);
  }, 90_000); // a password sign-in (scrypt) took 25 s of it at load 45

  it('audits each change once, as user.teams by the management key with its address', async () => {
    const page = await api(`/audit?action=user.teams&target_id=${viewerId}`);
    expect(page.status, describeResponse(page)).toBe(200);
    const entries = (page.body.data as Array<Entry & { source: string }>).reverse();
    expect(entries.map((e) => [e.source, e.actor.kind, e.actor.id, e.client_address, e.target.kind])).toEqual(
      [
        ['dashboard', 'management_key', stack.account.managementKeyId, CLIENT, 'user'],
        ['dashboard', 'management_key', stack.account.managementKeyId, CLIENT, 'user'],
      ],
    );
    expect(entries.map((e) => [e.before?.teams, e.after?.teams])).toEqual([
      [[], [team]],
      [[team], []],
    ]);
  });

  it('refuses bad input (400 naming the field), unknown users and teams (404), inference keys (403)', async () => {
    const bad: Array<[string, string, unknown, RegExp]> = [
      ['POST', `/teams/${team}/members`, {}, /^user_id: name the user by exactly one/],
      ['POST', `/teams/${team}/members`, { user_id: viewerId, email: viewer.email }, /exactly one/],
      ['POST', `/teams/${team}/members`, { user_id: 'alice' }, /^user_id: must be a user id \(uuid\)/],
      ['POST', `/teams/${team}/members`, { email: 5 }, /^email: expected a string/],
      ['POST', `/teams/${team}/members`, { email: viewer.email, role: 'owner' }, /^role: unknown field/],
      ['POST', '/teams/search/members', { email: viewer.email }, /^id: must be a team id \(uuid\)/],
      ['GET', '/teams/search/members', undefined, /^id: must be a team id \(uuid\)/],
      ['DELETE', `/teams/${team}/members/alice`, undefined, /^user_id: must be a dashboard user id/],
    ];
    for (const [method, path, body, message] of bad) {
      const res = await api(path, method, body);
      expect([method, path, res.status, res.body?.error?.message]).toEqual([
        method,
        path,
        400,
        expect.stringMatching(message),
      ]);
    }
    const nobody = await api(`/teams/${team}/members`, 'POST', { email: 'nobody@example.test' });
    expect(nobody.status, describeResponse(nobody)).toBe(404);
    expect(nobody.body.error.message).toBe('No dashboard user nobody@example.test in this account');
    expect((await api(`/teams/${team}/members`, 'POST', { user_id: UNKNOWN })).status).toBe(404);
    expect((await api(`/teams/${UNKNOWN}/members`)).status).toBe(404);
    expect((await api(`/teams/${UNKNOWN}/members`, 'POST', { user_id: viewerId })).status).toBe(404);
    expect((await api(`/teams/${UNKNOWN}/members/${viewerId}`, 'DELETE')).status).toBe(404);
    const inference = await api(`/teams/${team}/members`, 'GET', undefined, stack.inferenceKey);
    expect(inference.status, describeResponse(inference)).toBe(403);
    expect((await stack.api(`/teams/${team}/members`)).status).toBe(401);
  });

  it("another account's management key: its team and users are 404, never changed", async () => {
    const other: StackAccount = await stack.createAccount();
    const theirs = (await api('/teams', 'POST', { name: 'theirs' }, other.managementKey)).body.data
      .id as string;
    // Our team, seen by them.
    for (const [method, path, body] of [
      ['GET', `/teams/${team}/members`],
      ['POST', `/teams/${team}/members`, { user_id: viewerId }],
      ['DELETE', `/teams/${team}/members/${viewerId}`],
    ] as const) {
      const res = await api(path, method, body, other.managementKey);
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    // Our user, added to their team: no such user in their account.
    const foreign = await api(
      `/teams/${theirs}/members`,
      'POST',
      { email: viewer.email },
      other.managementKey,
    );
    expect(foreign.status, describeResponse(foreign)).toBe(404);
    expect((await api(`/teams/${team}/members`)).body).toEqual({ data: [] });
  });

  it("the dashboard's member routes take only the keys service's token and the acting key", async () => {
    const path = `/internal/accounts/${stack.account.id}/teams/${team}/members`;
    const call = async (signer: 'keys' | 'admin' | null, headers: Record<string, string> = {}) => {
      const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
      if (signer) {
        h[SERVICE_TOKEN_HEADER] = await createServiceSigner(
          signer,
          stack.serviceKeys[signer].privateKey,
        ).sign('dashboard');
      }
      return dash.request('POST', path, { body: { user_id: viewerId }, headers: h });
    };
    expect((await call(null)).status).toBe(401);
    expect((await call('admin')).status).toBe(403);
    const anonymous = await call('keys');
    expect(anonymous.status, anonymous.text).toBe(400);
    expect(anonymous.body.error.message).toMatch(/x-tollgate-actor-key/);
    // A malformed user id is refused by the route's contract, naming the field.
    const malformed = await dash.request('DELETE', `${path}/not-a-user-id`, {
      headers: {
        [SERVICE_TOKEN_HEADER]: await createServiceSigner('keys', stack.serviceKeys.keys.privateKey).sign(
          'dashboard',
        ),
        'x-tollgate-actor-key': stack.account.managementKeyId,
      },
    });
    expect(malformed.status, malformed.text).toBe(400);
    expect(malformed.body.error).toMatchObject({
      message: 'userId: must be a user id (uuid)',
      metadata: { field: 'userId' },
    });
    expect((await api(`/teams/${team}/members`)).body).toEqual({ data: [] });
  });

  it("a deleted team's membership does not block a change of the user's teams (left out, audited)", async () => {
    const gone = (await api('/teams', 'POST', { name: 'short-lived' })).body.data.id as string;
    const next = (await api('/teams', 'POST', { name: 'next' })).body.data.id as string;
    expect((await api(`/teams/${gone}/members`, 'POST', { user_id: viewerId })).status).toBe(201);
    expect((await api(`/teams/${gone}`, 'DELETE')).status).toBe(200);
    const users = async () =>
      ((await owner.call('GET', '/api/users')).body.data as Array<{ id: string; team_ids: string[] }>).find(
        (u) => u.id === viewerId,
      )!.team_ids;
    // The Teams page sends the user's teams plus the one added: the deleted one among them.
    const put = await owner.call('PUT', `/api/users/${viewerId}/teams`, {
      team_ids: [...(await users()), next],
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data).toEqual({ id: viewerId, team_ids: [next] });
    expect(await users()).toEqual([next]);
    // A team that is neither the account's nor one the user was in is still refused.
    const unknown = await owner.call('PUT', `/api/users/${viewerId}/teams`, { team_ids: [UNKNOWN] });
    expect(unknown.status, unknown.text).toBe(400);
    const entry = (await owner.call('GET', `/api/audit?source=dashboard&target_id=${viewerId}&limit=1`)).body
      .data[0] as Entry;
    expect([entry.action, entry.before?.teams, entry.after?.teams]).toEqual(['user.teams', [gone], [next]]);
    expect((await api(`/teams/${next}/members/${viewerId}`, 'DELETE')).status).toBe(200);
  });
});
