/**
 * The dashboard's browser API answers what its contract says (`dashboardApi` in @tollgate/contracts,
 * whose types the SPA imports instead of hand-written copies): every route the SPA reads, on an
 * account with a key, a served request, a refused one, a webhook, a delivery and audit entries, is
 * parsed with the route's schema. A field the server drops or renames fails here, not in a browser.
 */
import { type DashboardAnswer, dashboardApi } from '@tollgate/contracts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DashboardSession, startTestDashboard, type TestDashboard } from '../support/dashboard';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let owner: DashboardSession;
let keyHash = '';
let servedId = '';
let refusedId = '';

const messages = [{ role: 'user', content: 'hi' }];
const range = () => {
  const day = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  return `from=${new Date(day - 86_400_000).toISOString()}&to=${new Date(day + 86_400_000).toISOString()}`;
};

/** GET as the SPA does; the answer parsed with the route's schema (throws on any mismatch). */
async function read<R extends keyof typeof dashboardApi>(
  route: R,
  path: string,
): Promise<DashboardAnswer<R>> {
  const r = await owner.call('GET', path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  const parsed = dashboardApi[route].safeParse(r.body);
  expect(parsed.error?.issues ?? [], path).toEqual([]);
  return parsed.data as DashboardAnswer<R>;
}

beforeAll(async () => {
  stack = await startStack({ billingEnv: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' } });
  dash = await startTestDashboard(stack);
  owner = await dash.signIn(await dash.createUser(stack.account.id, 'owner'));
  const created = await owner.call('POST', '/api/keys', { name: 'contract', limit: 3, limit_reset: 'daily' });
  expect(created.status, created.text).toBe(201);
  expect(dashboardApi.createKey.safeParse(created.body).error?.issues ?? []).toEqual([]);
  keyHash = created.body.data.hash;
  const served = await stack.api('/chat/completions', {
    key: created.body.data.key,
    body: { model: MODEL, messages, max_tokens: 8 },
    headers: { 'X-Title': 'Contract App' },
  });
  expect(served.status, served.text).toBe(200);
  servedId = served.body.id;
  const refused = await stack.api('/chat/completions', {
    key: created.body.data.key,
    body: { model: MODEL, messages: 'not a list' },
  });
  expect(refused.status).toBe(400);
  refusedId = refused.headers.get('x-request-id') as string;
  await stack.waitForGeneration(servedId, created.body.data.key);
}, 120_000);
afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

describe('the dashboard API answers its contract', () => {
  it('session, sign-in options, overview, keys, models and credits', async () => {
    const me = await read('me', '/api/me');
    expect(me.data.user.role).toBe('owner');
    const sso = await dash.request('GET', '/api/sso');
    expect(dashboardApi.sso.safeParse(sso.body).error?.issues ?? []).toEqual([]);
    expect((await read('overview', '/api/overview')).data.daily).toHaveLength(30);
    expect((await read('keys', '/api/keys?include_revoked=true')).data.map((k) => k.hash)).toContain(keyHash);
    expect((await read('models', '/api/models')).data.length).toBeGreaterThan(0);
    const team = await stack.api('/teams', {
      key: stack.account.managementKey,
      body: { name: 'contract team', limit: 5, limit_reset: 'weekly' },
    });
    expect(team.status, team.text).toBe(201);
    expect((await read('teams', '/api/teams')).data).toEqual([
      expect.objectContaining({ name: 'contract team', limit: 5, usage: 0, limit_remaining: 5 }),
    ]);
    expect((await read('credits', '/api/credits?limit=50')).data.ledger.length).toBeGreaterThan(0);
  });

  it('usage, latency, the request log, a generation and the sessions', async () => {
    for (const group of ['none', 'model', 'key', 'team'])
      await read('usage', `/api/usage?${range()}&granularity=day&group_by=${group}`);
    await read('latency', `/api/latency?${range()}&group_by=model`);
    const log = await read('generations', '/api/generations?limit=50');
    expect(log.data.map((g) => g.id)).toContain(servedId);
    await read('generations', '/api/generations?sort=cost&order=desc');
    expect((await read('generation', `/api/generations/${servedId}`)).data.key_id).toBe(keyHash);
    await read('sessions', `/api/sessions?limit=10&${range()}`);
  });

  it('errors and refusals', async () => {
    await read('errors', `/api/errors?${range()}&granularity=day`);
    await read('errors', `/api/errors?${range()}&granularity=total&group_by=key`);
    const refusal = await vi.waitFor(
      async () => {
        const r = await owner.call('GET', `/api/refusals/${refusedId}`);
        expect(r.status, r.text).toBe(200);
        return r;
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(dashboardApi.refusal.safeParse(refusal.body).error?.issues ?? []).toEqual([]);
    expect((await read('refusals', `/api/refusals?key_id=${keyHash}&limit=20`)).data[0]?.id).toBe(refusedId);
  });

  it('users, invitations and sign-in links', async () => {
    const invited = await owner.call('POST', '/api/users', {
      email: 'contract-invite@example.test',
      display_name: 'Invited',
      role: 'viewer',
    });
    expect(invited.status, invited.text).toBe(201);
    expect(dashboardApi.invite.safeParse(invited.body).error?.issues ?? []).toEqual([]);
    const users = await read('users', '/api/users');
    expect(users.data.find((u) => u.id === invited.body.data.id)?.invited).toBe(true);
    const link = await owner.call('POST', `/api/users/${invited.body.data.id}/sign-in-link`);
    expect(link.status, link.text).toBe(201);
    expect(dashboardApi.signInLink.safeParse(link.body).error?.issues ?? []).toEqual([]);
  });

  it('webhooks and their delivery log', async () => {
    const created = await owner.call('POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      thresholds: [80],
    });
    expect(created.status, created.text).toBe(201);
    expect(dashboardApi.createWebhook.safeParse(created.body).error?.issues ?? []).toEqual([]);
    await read('webhooks', '/api/webhooks');
    expect((await owner.call('POST', `/api/webhooks/${created.body.data.id}/test`)).status).toBe(200);
    const log = await read('deliveries', `/api/webhooks/${created.body.data.id}/deliveries?limit=100`);
    expect(log.data.length).toBeGreaterThan(0);
  });

  it('the audit log names the log of each entry, merged or one log at a time', async () => {
    for (const source of ['all', 'keys', 'billing', 'dashboard'] as const) {
      const page = await read('audit', `/api/audit?source=${source}`);
      expect(page.data.length, source).toBeGreaterThan(0);
      if (source !== 'all') expect(new Set(page.data.map((e) => e.source))).toEqual(new Set([source]));
    }
  });
});
