/**
 * The audit log through the real stack: key changes made by a management key (through the proxy),
 * a dashboard user (through the dashboard API) and the admin CLI each appear exactly once, with the
 * right actor, the client's address as TRUSTED_PROXIES resolves it, and the record before and after;
 * `GET /audit` (management keys: the merged timeline of the keys service's, billing's and the
 * dashboard's logs, read over their internal routes), the dashboard's filters and CSV export; the
 * tables are append-only.
 */
import { createServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../services/keys/src/cli/command';
import { commandGroups } from '../../services/keys/src/cli/main';
import {
  type DashboardSession,
  startTestDashboard,
  type TestDashboard,
  type TestUser,
} from '../support/dashboard';
import { describeResponse, type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let owner: TestUser;
let ownerId: string;
let session: DashboardSession;
let management: string;
let managementId: string;

const API_CLIENT = '198.51.100.9';
const DASHBOARD_CLIENT = '203.0.113.5';

beforeAll(async () => {
  // `dashboard`: keys knows the dashboard's address (DASHBOARD_URL), as in production.
  stack = await startStack({
    proxyEnv: { TRUSTED_PROXIES: '1' },
    dashboard: true,
    // Webhook endpoints on this host (their changes are audited; nothing is delivered to them here).
    billingEnv: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' },
  });
  dash = await startTestDashboard(stack, { env: { TRUSTED_PROXIES: '1' } });
  owner = await dash.createUser(stack.account.id, 'owner');
  session = await dash.signIn(owner);
  ownerId = (await session.call('GET', '/api/me')).body.data.user.id;
  management = stack.account.managementKey;
  managementId = stack.account.managementKeyId;
});
afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

const api = (path: string, method = 'GET', body?: unknown) =>
  stack.api(path, { key: management, method, body, headers: { 'x-forwarded-for': API_CLIENT } });

const dashboard = (method: string, path: string, body?: unknown) =>
  session.call(method, path, body, { headers: { 'x-forwarded-for': DASHBOARD_CLIENT } });

async function cli(args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, '--json'], commandGroups, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: {
      DATABASE_URL: stack.infra.database.url,
      REDIS_URL: stack.infra.redis.url,
      REDIS_PREFIX: stack.infra.redis.prefix,
      BILLING_URL: stack.services.billing.url,
      ...(dash ? { DASHBOARD_URL: dash.url } : {}),
    },
  });
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout);
}

interface Entry {
  id: string;
  action: string;
  actor: { kind: string; id: string | null };
  client_address: string | null;
  target: { kind: string; id: string };
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

describe('audit log', () => {
  let apiKey: string;
  let dashKey: string;
  let cliKey: string;
  let teamId: string;

  it('records every key change once, with its actor, address, before and after', async () => {
    // A management key, through the proxy.
    const created = await api('/keys', 'POST', { name: 'api made', limit: 5, limit_reset: 'monthly' });
    expect(created.status, describeResponse(created)).toBe(201);
    apiKey = created.body.data.hash;
    expect((await api(`/keys/${apiKey}`, 'PATCH', { limit: 7, rate_limit_rpm: 60 })).status).toBe(200);
    // A change that changes nothing is not a change: no entry.
    expect((await api(`/keys/${apiKey}`, 'PATCH', { limit: 7 })).status).toBe(200);
    expect((await api(`/keys/${apiKey}`, 'DELETE')).status).toBe(200);

    // A dashboard user, through the dashboard API.
    const made = await dashboard('POST', '/api/keys', { name: 'dashboard made' });
    expect(made.status, made.text).toBe(201);
    dashKey = made.body.data.hash;
    expect((await dashboard('PATCH', `/api/keys/${dashKey}`, { disabled: true })).status).toBe(200);
    expect((await dashboard('DELETE', `/api/keys/${dashKey}`)).status).toBe(200);

    // The admin CLI.
    const cliMade = await cli([
      'keys',
      'create-management',
      '--account',
      stack.account.slug,
      '--name',
      'cli made',
    ]);
    cliKey = cliMade.data.hash;
    await cli(['keys', 'disable-management', '--account', stack.account.slug, '--hash', cliKey]);
    await cli(['keys', 'revoke-management', '--account', stack.account.slug, '--hash', cliKey]);

    // Teams, by the management key.
    const team = await api('/teams', 'POST', { name: 'platform' });
    expect(team.status, describeResponse(team)).toBe(201);
    teamId = team.body.data.id;
    expect((await api(`/teams/${teamId}`, 'PATCH', { name: 'platform team' })).status).toBe(200);
    expect((await api(`/teams/${teamId}`, 'PATCH', { name: 'platform team' })).status).toBe(200);
    expect((await api(`/teams/${teamId}`, 'DELETE')).status).toBe(200);

    const listed = await api('/audit?limit=500');
    expect(listed.status, describeResponse(listed)).toBe(200);
    const entries = listed.body.data as Entry[];
    const of = (hash: string) =>
      entries
        .filter((e) => e.target.id === hash)
        .map((e) => [e.action, e.actor.kind, e.actor.id, e.client_address])
        .reverse();
    expect(of(apiKey)).toEqual([
      ['key.create', 'management_key', managementId, API_CLIENT],
      ['key.update', 'management_key', managementId, API_CLIENT],
      ['key.revoke', 'management_key', managementId, API_CLIENT],
    ]);
    expect(of(dashKey)).toEqual([
      ['key.create', 'user', ownerId, DASHBOARD_CLIENT],
      ['key.update', 'user', ownerId, DASHBOARD_CLIENT],
      ['key.revoke', 'user', ownerId, DASHBOARD_CLIENT],
    ]);
    expect(of(cliKey)).toEqual([
      ['key.create', 'admin_cli', null, null],
      ['key.update', 'admin_cli', null, null],
      ['key.revoke', 'admin_cli', null, null],
    ]);
    expect(of(teamId)).toEqual([
      ['team.create', 'management_key', managementId, API_CLIENT],
      ['team.update', 'management_key', managementId, API_CLIENT],
      ['team.delete', 'management_key', managementId, API_CLIENT],
    ]);
    const renamed = entries.find((e) => e.target.id === teamId && e.action === 'team.update')!;
    expect([renamed.before, renamed.after]).toEqual([
      { name: 'platform', limit: null, limit_reset: null, rate_limit_tpm: null },
      { name: 'platform team', limit: null, limit_reset: null, rate_limit_tpm: null },
    ]);
    // The stack's own management key was made through the same in-process path as the CLI.
    expect(of(managementId)).toEqual([['key.create', 'admin_cli', null, null]]);

    const update = entries.find((e) => e.target.id === apiKey && e.action === 'key.update')!;
    expect(update.before).toMatchObject({ name: 'api made', limit: '5', rate_limit_rpm: null });
    expect(update.after).toMatchObject({ name: 'api made', limit: '7', rate_limit_rpm: 60 });
    const create = entries.find((e) => e.target.id === apiKey && e.action === 'key.create')!;
    expect(create.before).toBeNull();
    // Never the digest nor a plaintext key (the label is the public, shortened form).
    expect(JSON.stringify(entries)).not.toMatch(/digest|sk-tg-v1-[0-9a-f]{64}/);
  });

  it("a client's own x-tollgate-client-address header is not believed", async () => {
    const spoofed = await stack.api('/keys', {
      key: management,
      body: { name: 'spoofed' },
      headers: { 'x-forwarded-for': API_CLIENT, 'x-tollgate-client-address': '192.0.2.66' },
    });
    expect(spoofed.status, describeResponse(spoofed)).toBe(201);
    const entries = await api(`/audit?target_id=${spoofed.body.data.hash}`);
    expect(entries.body.data.map((e: Entry) => e.client_address)).toEqual([API_CLIENT]);
  });

  it('filters and pages; an inference key may not read it', async () => {
    const users = await api('/audit?actor_kind=user');
    expect(users.status).toBe(200);
    expect((users.body.data as Entry[]).map((e) => e.action)).toEqual([
      'key.revoke',
      'key.update',
      'key.create',
    ]);
    const first = await api('/audit?limit=2');
    expect(first.body.data).toHaveLength(2);
    const next = await api(`/audit?limit=2&before=${first.body.next_before}`);
    expect(next.status, describeResponse(next)).toBe(200);
    const ids = (p: { body: { data: Array<Entry & { source: string }> } }) =>
      p.body.data.map((e) => `${e.source}:${e.id}`);
    expect(ids(next).filter((id) => ids(first).includes(id))).toEqual([]);
    expect(next.body.data[0].at <= first.body.data[1].at).toBe(true);
    for (const query of ['actor_kind=robot', 'since=yesterday', 'before=keys:x', 'before=12', 'colour=red']) {
      const bad = await api(`/audit?${query}`);
      expect(bad.status, `${query}: ${describeResponse(bad)}`).toBe(400);
      expect(bad.body.error.message).toMatch(new RegExp(query.split('=')[0]!));
    }

    const inference = await stack.api('/audit', { key: stack.inferenceKey });
    expect(inference.status).toBe(403);
  });

  it('dashboard: filters and a formula-guarded CSV export', async () => {
    const json = await dashboard('GET', `/api/audit?target_id=${dashKey}`);
    expect(json.status, json.text).toBe(200);
    expect(json.body.data).toHaveLength(3);
    const csv = await dashboard('GET', `/api/audit?format=csv&target_id=${apiKey}`);
    expect(csv.status, csv.text).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^"source","id","at","actor_kind"/);
    expect(lines[1]).toContain(`"key.revoke","key","${apiKey}"`);
    expect((await dashboard('GET', '/api/audit?colour=red')).status).toBe(400);
  });

  it('billing audits credit grants and the postpaid setting (admin CLI) in its own log', async () => {
    await stack.addCredits(stack.account.id, '3.25');
    const dashboardSigner = createServiceSigner('dashboard', stack.serviceKeys.dashboard.privateKey);
    const res = await fetch(`${stack.services.billing.url}/internal/accounts/${stack.account.id}/audit`, {
      headers: { [SERVICE_TOKEN_HEADER]: await dashboardSigner.sign('billing') },
    });
    expect(res.status).toBe(200);
    const entries = ((await res.json()) as { data: Entry[] }).data.filter(
      (e) => e.action === 'credits.grant',
    );
    expect(entries[0]).toMatchObject({
      actor: { kind: 'admin_cli', id: null },
      target: { kind: 'account', id: stack.account.id },
      after: { amount: '3.25', note: 'test stack' },
    });
    // The dashboard lists them too (source=billing), as CSV as well.
    const listed = await dashboard('GET', '/api/audit?source=billing&limit=1');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data[0]).toMatchObject({ action: 'credits.grant', actor: { kind: 'admin_cli' } });
    const csv = await dashboard('GET', '/api/audit?source=billing&format=csv');
    expect(csv.text).toContain('"credits.grant","account"');
    const after = Number(entries[0]!.after!.total_credits);
    expect(after - Number(entries[0]!.before!.total_credits)).toBeCloseTo(3.25, 10);
  });

  it('dashboard: role changes, removals and sign-in links are audited once, as the acting owner', async () => {
    const member = await dash.createUser(stack.account.id, 'viewer');
    const users = await dashboard('GET', '/api/users');
    const memberId = (users.body.data as Array<{ id: string; email: string }>).find(
      (u) => u.email === member.email,
    )!.id;
    expect((await dashboard('PATCH', `/api/users/${memberId}`, { role: 'owner' })).status).toBe(204);
    // Already an owner: no change, no entry.
    expect((await dashboard('PATCH', `/api/users/${memberId}`, { role: 'owner' })).status).toBe(204);
    expect((await dashboard('POST', `/api/users/${memberId}/sign-in-link`)).status).toBe(201);
    expect((await dashboard('DELETE', `/api/users/${memberId}`)).status).toBe(204);
    const page = await dashboard('GET', '/api/audit?source=dashboard');
    expect(page.status, page.text).toBe(200);
    const mine = (page.body.data as Entry[]).filter((e) => e.target.id === memberId).reverse();
    expect(mine.map((e) => [e.action, e.actor.kind, e.actor.id, e.client_address])).toEqual([
      // dash.createUser invites through the admin CLI's internal route.
      ['user.invite', 'admin_cli', null, null],
      ['user.role', 'user', ownerId, DASHBOARD_CLIENT],
      ['user.password_reset', 'user', ownerId, DASHBOARD_CLIENT],
      ['user.remove', 'user', ownerId, DASHBOARD_CLIENT],
    ]);
    expect(mine[0]!.after).toEqual({ email: member.email, role: 'viewer' });
    expect([mine[1]!.before, mine[1]!.after]).toEqual([
      { email: member.email, role: 'viewer' },
      { email: member.email, role: 'owner' },
    ]);
    expect((await dashboard('GET', '/api/audit?source=dashboard&actor_kind=robot')).status).toBe(400);
    // An owner's invitation: the owner and their address.
    const invited = await dashboard('POST', '/api/users', {
      email: `audited-${Date.now()}@example.test`,
      display_name: 'Audited',
      role: 'viewer',
    });
    expect(invited.status, invited.text).toBe(201);
    const latest = await dashboard('GET', '/api/audit?source=dashboard&limit=1');
    expect(latest.body.data[0]).toMatchObject({
      action: 'user.invite',
      actor: { kind: 'user', id: ownerId },
      client_address: DASHBOARD_CLIENT,
      target: { kind: 'user', id: invited.body.data.id },
    });
  });

  it('every audited action once, with its actor, in the merged timeline (keys + billing + dashboard)', async () => {
    await new Promise((r) => setTimeout(r, 50)); // the earlier tests' entries are older than `since`
    const since = new Date().toISOString();
    const expected: Array<[string, string, string, string | null, string]> = []; // target, action, actor kind, actor id, log
    // Keys and teams by a management key.
    const key = (await api('/keys', 'POST', { name: 'all: api' })).body.data.hash as string;
    await api(`/keys/${key}`, 'PATCH', { limit: 3 });
    await api(`/keys/${key}`, 'DELETE');
    const team = (await api('/teams', 'POST', { name: 'all: team' })).body.data.id as string;
    await api(`/teams/${team}`, 'PATCH', { name: 'all: team 2' });
    for (const a of ['key.create', 'key.update', 'key.revoke'])
      expected.push([key, a, 'management_key', managementId, 'keys']);
    expected.push([team, 'team.create', 'management_key', managementId, 'keys']);
    expected.push([team, 'team.update', 'management_key', managementId, 'keys']);
    // Keys by a dashboard user.
    const dKey = (await dashboard('POST', '/api/keys', { name: 'all: dashboard' })).body.data.hash as string;
    await dashboard('PATCH', `/api/keys/${dKey}`, { limit: 2 });
    await dashboard('DELETE', `/api/keys/${dKey}`);
    for (const a of ['key.create', 'key.update', 'key.revoke'])
      expected.push([dKey, a, 'user', ownerId, 'keys']);
    // Keys, credits and users by the admin CLI.
    const cKey = (
      await cli(['keys', 'create-management', '--account', stack.account.slug, '--name', 'all: cli'])
    ).data.hash as string;
    await cli(['keys', 'revoke-management', '--account', stack.account.slug, '--hash', cKey]);
    expected.push(
      [cKey, 'key.create', 'admin_cli', null, 'keys'],
      [cKey, 'key.revoke', 'admin_cli', null, 'keys'],
    );
    await stack.addCredits(stack.account.id, '1.5');
    expected.push([stack.account.id, 'credits.grant', 'admin_cli', null, 'billing']);
    await cli(['accounts', 'set-postpaid', '--account', stack.account.slug]);
    expected.push([stack.account.id, 'settings.postpaid', 'admin_cli', null, 'billing']);
    // Account settings (opt-in bodies) through each door: management key, owner, admin CLI.
    const account = stack.account.id;
    expect((await api('/account', 'PATCH', { store_bodies: true })).status).toBe(200);
    expect((await dashboard('PATCH', '/api/account', { store_bodies: false })).status).toBe(200);
    expect((await dashboard('PATCH', '/api/account', { store_bodies: false })).status).toBe(200); // no change
    await cli(['accounts', 'set-bodies', '--account', stack.account.slug]);
    expected.push(
      [account, 'account.update', 'management_key', managementId, 'keys'],
      [account, 'account.update', 'user', ownerId, 'keys'],
      [account, 'account.update', 'admin_cli', null, 'keys'],
    );
    // A team and its budget by the admin CLI; a key joins it and leaves it there.
    const s = stack.account.slug;
    const cliTeam = (
      await cli(['teams', 'create', '--account', s, '--name', 'all: cli team', '--limit', '5'])
    ).data.id as string;
    await cli(['teams', 'update', '--account', s, '--id', cliTeam, '--limit-reset', 'daily']);
    const teamKey = (await api('/keys', 'POST', { name: 'all: team key' })).body.data.hash as string;
    await cli(['keys', 'update', '--account', s, '--hash', teamKey, '--team-id', cliTeam]);
    await cli(['keys', 'update', '--account', s, '--hash', teamKey, '--team-id', 'none']);
    await cli(['teams', 'delete', '--account', s, '--id', cliTeam]);
    expected.push(
      [cliTeam, 'team.create', 'admin_cli', null, 'keys'],
      [cliTeam, 'team.update', 'admin_cli', null, 'keys'],
      [teamKey, 'key.create', 'management_key', managementId, 'keys'],
      [teamKey, 'key.update', 'admin_cli', null, 'keys'],
      [teamKey, 'key.update', 'admin_cli', null, 'keys'],
      [cliTeam, 'team.delete', 'admin_cli', null, 'keys'],
    );
    // Alert webhooks (billing's settings): made by a management key, changed and removed by the owner.
    const hook = await api('/webhooks', 'POST', { url: 'http://127.0.0.1:9/hook', thresholds: [50] });
    expect(hook.status, describeResponse(hook)).toBe(201);
    const hookId = hook.body.data.id as string;
    expect((await dashboard('PATCH', `/api/webhooks/${hookId}`, { thresholds: [80] })).status).toBe(200);
    expect((await dashboard('PATCH', `/api/webhooks/${hookId}`, { thresholds: [80] })).status).toBe(200); // no change
    expect((await dashboard('DELETE', `/api/webhooks/${hookId}`)).status).toBe(204);
    expected.push(
      [hookId, 'webhook.create', 'management_key', managementId, 'billing'],
      [hookId, 'webhook.update', 'user', ownerId, 'billing'],
      [hookId, 'webhook.delete', 'user', ownerId, 'billing'],
    );
    const member = await dash.createUser(stack.account.id, 'viewer');
    await dash.signIn(member);
    const users = (await dashboard('GET', '/api/users')).body.data as Array<{ id: string; email: string }>;
    const memberId = users.find((u) => u.email === member.email)!.id;
    expected.push([memberId, 'user.invite', 'admin_cli', null, 'dashboard']);
    // Users, roles, teams and sessions by the owner.
    await dashboard('PATCH', `/api/users/${memberId}`, { role: 'member' });
    // The management API's team members: the dashboard audits them for the management key.
    const joined = await api(`/teams/${team}/members`, 'POST', { email: member.email });
    expect(joined.status, describeResponse(joined)).toBe(201);
    expect((await api(`/teams/${team}/members`, 'POST', { user_id: memberId })).status).toBe(200); // no change
    expect((await api(`/teams/${team}/members/${memberId}`, 'DELETE')).status).toBe(200);
    expected.push(
      [memberId, 'user.teams', 'management_key', managementId, 'dashboard'],
      [memberId, 'user.teams', 'management_key', managementId, 'dashboard'],
    );
    await dashboard('PUT', `/api/users/${memberId}/teams`, { team_ids: [team] });
    // The admin CLI sets memberships too (by email), as the dashboard does.
    const left = await cli([
      'users',
      'set-teams',
      '--account',
      stack.account.slug,
      '--email',
      member.email,
      '--team-ids',
      'none',
    ]);
    expect(left.data).toMatchObject({ id: memberId, team_ids: [] });
    expected.push([memberId, 'user.teams', 'admin_cli', null, 'dashboard']);
    const ended = await dashboard('DELETE', `/api/users/${memberId}/sessions`);
    expect(ended.body.data.ended).toBe(2); // the invitation accepted, then a sign-in
    await dashboard('POST', `/api/users/${memberId}/sign-in-link`);
    await dashboard('DELETE', `/api/users/${memberId}`);
    for (const a of ['user.role', 'user.teams', 'user.sessions_end', 'user.password_reset', 'user.remove'])
      expected.push([memberId, a, 'user', ownerId, 'dashboard']);
    await api(`/teams/${team}`, 'DELETE');
    expected.push([team, 'team.delete', 'management_key', managementId, 'keys']);
    // An owner's invitation, sent again before it was accepted.
    const invited = await dashboard('POST', '/api/users', {
      email: `all-${Date.now()}@example.test`,
      display_name: 'All: invited',
      role: 'viewer',
    });
    expect(invited.status, invited.text).toBe(201);
    expect((await dashboard('POST', `/api/users/${invited.body.data.id}/sign-in-link`)).status).toBe(201);
    for (const a of ['user.invite', 'user.reinvite'])
      expected.push([invited.body.data.id, a, 'user', ownerId, 'dashboard']);

    // The same timeline through both doors: the dashboard's `source=all` and `GET /audit`.
    const doors = {
      dashboard: (query: string) => dashboard('GET', `/api/audit?source=all&${query}`),
      'GET /audit': (query: string) => api(`/audit?${query}`),
    };
    const timelines: Record<string, string[]> = {};
    for (const [door, read] of Object.entries(doors)) {
      const page = await read(`since=${since}&limit=500`);
      expect(page.status, `${door}: ${page.text}`).toBe(200);
      const entries = page.body.data as Array<Entry & { source: string; at: string }>;
      // Each action once per time it was done (a target may see the same action from several actors).
      const want = new Map<string, string[]>();
      for (const [target, action, kind, id, log] of expected)
        want.set(`${target} ${action}`, [...(want.get(`${target} ${action}`) ?? []), `${kind}:${id}:${log}`]);
      for (const [what, actors] of want) {
        const found = entries.filter((e) => `${e.target.id} ${e.action}` === what);
        const got = found.map((e) => `${e.actor.kind}:${e.actor.id}:${e.source}`);
        expect([door, what, got.sort()]).toEqual([door, what, actors.sort()]);
      }
      const extra = entries.filter((e) => !expected.some(([t, a]) => e.target.id === t && e.action === a));
      expect([door, extra.map((e) => [e.action, e.target.kind, e.actor.kind])]).toEqual([door, []]); // nothing else
      // Newest first across the three logs, and paged without loss or repeat.
      expect(entries.map((e) => e.at)).toEqual([...entries.map((e) => e.at)].sort().reverse());
      const seen: string[] = [];
      let before: string | null = null;
      do {
        const p: { status: number; text: string; body: { data: unknown; next_before: string | null } } =
          await read(`since=${since}&limit=4${before ? `&before=${before}` : ''}`);
        expect(p.status, `${door}: ${p.text}`).toBe(200);
        seen.push(...(p.body.data as Array<Entry & { source: string }>).map((e) => `${e.source}:${e.id}`));
        before = p.body.next_before;
      } while (before);
      timelines[door] = entries.map((e) => `${e.source}:${e.id}`);
      expect(seen).toEqual(timelines[door]);
    }
    expect(timelines['GET /audit']).toEqual(timelines.dashboard);
    // Filters apply to every log: the admin CLI's entries come from all three.
    const byCli = await api(`/audit?since=${since}&actor_kind=admin_cli`);
    expect(
      (byCli.body.data as Array<Entry & { source: string }>).map((e) => [e.source, e.action]).reverse(),
    ).toEqual([
      ['keys', 'key.create'],
      ['keys', 'key.revoke'],
      ['billing', 'credits.grant'],
      ['billing', 'settings.postpaid'],
      ['keys', 'account.update'],
      ['keys', 'team.create'],
      ['keys', 'team.update'],
      ['keys', 'key.update'],
      ['keys', 'key.update'],
      ['keys', 'team.delete'],
      ['dashboard', 'user.invite'],
      ['dashboard', 'user.teams'],
    ]);
    const memberships = (await api(`/audit?since=${since}&action=user.teams`)).body.data as Entry[];
    expect(memberships.map((e) => [e.actor.kind, e.before?.teams, e.after?.teams])).toEqual([
      ['admin_cli', [team], []],
      ['user', [], [team]],
      ['management_key', [team], []],
      ['management_key', [], [team]],
    ]);
    const bodies = (await api(`/audit?since=${since}&action=account.update`)).body.data as Entry[];
    expect(bodies.map((e) => [e.actor.kind, e.before, e.after]).reverse()).toEqual([
      ['management_key', { store_bodies: false }, { store_bodies: true }],
      ['user', { store_bodies: true }, { store_bodies: false }],
      ['admin_cli', { store_bodies: false }, { store_bodies: true }],
    ]);
    const hookChange = (await api(`/audit?since=${since}&action=webhook.update`)).body.data[0] as Entry;
    expect(hookChange).toMatchObject({
      client_address: DASHBOARD_CLIENT,
      before: { thresholds: [50], enabled: true },
      after: { thresholds: [80], enabled: true },
    });
    expect(JSON.stringify(hookChange)).not.toMatch(/whsec_|secret/);
    const grants = await api(`/audit?since=${since}&action=credits.grant`);
    expect(grants.body.data.map((e: Entry & { source: string }) => e.source)).toEqual(['billing']);
    const none = await api(`/audit?since=${since}&until=${since}`);
    expect(none.body).toEqual({ data: [], next_before: null });
    const csv = await dashboard('GET', `/api/audit?source=all&since=${since}&format=csv`);
    expect(csv.text.trim().split('\r\n')).toHaveLength(expected.length + 1);
    expect(csv.text).toContain('"billing"');
    expect((await dashboard('GET', '/api/audit?source=all&before=keys:x')).status).toBe(400);
  }, 120_000); // some 45 changes through four doors, each over HTTP or a CLI run: slow on a loaded host

  it("PUT /internal/team-members (the CLI's users set-teams): only the admin's identity, a user and teams of the account", async () => {
    const team = (await api('/teams', 'POST', { name: 'members: team' })).body.data.id as string;
    const put = async (body: unknown, signer?: 'admin' | 'keys') => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (signer) {
        const s = createServiceSigner(signer, stack.serviceKeys[signer].privateKey);
        headers[SERVICE_TOKEN_HEADER] = await s.sign('dashboard');
      }
      const res = await fetch(`${dash.url}/internal/team-members`, {
        method: 'PUT',
        headers,
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    const body = { account_id: stack.account.id, email: owner.email.toUpperCase(), team_ids: [team] };
    expect((await put(body)).status).toBe(401);
    expect((await put(body, 'keys')).status).toBe(403);
    const unknownUser = await put({ ...body, email: 'nobody@example.test' }, 'admin');
    expect([unknownUser.status, unknownUser.body.error.message]).toEqual([
      404,
      'No user nobody@example.test in this account',
    ]);
    const foreignTeam = await put({ ...body, team_ids: ['00000000-0000-4000-8000-000000000000'] }, 'admin');
    expect(foreignTeam.status).toBe(400);
    expect(foreignTeam.body.error.message).toMatch(/team_ids: no team/);
    const bad = await put({ ...body, team_ids: ['search'] }, 'admin');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/team_ids/);
    const ok = await put(body, 'admin');
    expect(ok).toEqual({
      status: 200,
      body: { data: { id: ownerId, email: owner.email, team_ids: [team] } },
    });
    const teams = await dashboard('GET', '/api/teams');
    expect(teams.body.data.find((t: { id: string }) => t.id === team).member_ids).toEqual([ownerId]);
    expect((await put({ ...body, team_ids: [] }, 'admin')).status).toBe(200);
    await api(`/teams/${team}`, 'DELETE');
  });

  it('is append-only: the table refuses UPDATE and DELETE', async () => {
    const db = new pg.Client({ connectionString: stack.infra.database.url });
    await db.connect();
    try {
      await expect(db.query(`update keys.audit_log set actor_kind = 'admin_cli'`)).rejects.toThrow(
        /append-only/,
      );
      await expect(db.query('delete from keys.audit_log')).rejects.toThrow(/append-only/);
      await expect(db.query('truncate keys.audit_log')).rejects.toThrow(/append-only/);
      await expect(db.query('delete from billing.audit_log')).rejects.toThrow(/append-only/);
      await expect(db.query('delete from dashboard.audit_log')).rejects.toThrow(/append-only/);
    } finally {
      await db.end();
    }
  });

  it('GET /audit answers 503 naming the dashboard when the dashboard does not answer (never a partial timeline)', async () => {
    await dash.close();
    const down = await api('/audit');
    expect(down.status, describeResponse(down)).toBe(503);
    expect(down.body.error.message).toMatch(/dashboard did not answer/);
  });
});
