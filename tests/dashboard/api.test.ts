/**
 * The dashboard's JSON API against the real stack (keys, billing, proxy, Postgres, Redis, RabbitMQ):
 * sign-in, sessions (cookie flags, expiry, sign-out), CSRF and Origin checks, sign-in throttling,
 * roles (a viewer changes nothing) and account isolation on every route.
 */
import { devServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type DashboardSession,
  startTestDashboard,
  type TestDashboard,
  type TestUser,
} from '../support/dashboard';
import { MODEL, type Stack, type StackAccount, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let now = Date.now();
let owner: TestUser;
let viewer: TestUser;
let other: StackAccount;
let otherOwner: TestUser;
let ownerSession: DashboardSession;

beforeAll(async () => {
  stack = await startStack();
  dash = await startTestDashboard(stack, {
    clock: () => new Date(now),
    env: {
      SESSION_TTL_MINUTES: '30',
      SIGNIN_MAX_FAILURES: '3',
      SIGNIN_WINDOW_MINUTES: '10',
      // Behind one load balancer (this test client): the client is X-Forwarded-For's last entry.
      TRUSTED_PROXIES: '1',
    },
  });
  owner = await dash.createUser(stack.account.id, 'owner');
  viewer = await dash.createUser(stack.account.id, 'viewer');
  other = await stack.createAccount({ credits: '5' });
  otherOwner = await dash.createUser(other.id, 'owner');
  ownerSession = await dash.signIn(owner);
});
afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

const UNKNOWN_KEY = '00000000-0000-4000-8000-000000000000';
const RANGE = () => {
  const day = new Date(Math.floor(now / 86_400_000) * 86_400_000);
  return `from=${new Date(day.getTime() - 86_400_000).toISOString()}&to=${new Date(day.getTime() + 86_400_000).toISOString()}`;
};

/** Every route of the dashboard API (paths with a placeholder key / generation id). */
const READ_ROUTES = [
  '/api/me',
  '/api/users',
  '/api/keys',
  '/api/overview',
  `/api/usage?${'from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z'}`,
  '/api/generations',
  '/api/generations/gen-1-aaaaaaaaaaaaaaaaaaaa',
  '/api/credits',
  '/api/models',
];
const WRITE_ROUTES: Array<[string, string, unknown]> = [
  ['POST', '/api/keys', { name: 'x' }],
  ['PATCH', `/api/keys/${UNKNOWN_KEY}`, { disabled: true }],
  ['DELETE', `/api/keys/${UNKNOWN_KEY}`, undefined],
  ['POST', '/api/users', { email: 'x@example.test', display_name: 'X', role: 'viewer' }],
  ['DELETE', '/api/session', undefined],
];

describe('authentication', () => {
  it.each(READ_ROUTES)('GET %s answers 401 without a session, or with a forged cookie', async (path) => {
    for (const headers of [{}, { cookie: '__Host-tg_session=forged-value' }] as Array<
      Record<string, string>
    >) {
      const r = await dash.request('GET', path, { headers });
      expect(r.status, r.text).toBe(401);
      expect(r.body.error.metadata.error_type).toBe('unauthorized');
    }
  });

  it.each(WRITE_ROUTES)('%s %s answers 401 without a session', async (method, path, body) => {
    const r = await dash.request(method, path, { body });
    expect(r.status, r.text).toBe(401);
  });

  it('signs in with the right password: an HttpOnly, SameSite=Strict, Secure, __Host- session cookie', async () => {
    const r = await dash.request('POST', '/api/session', {
      body: { email: owner.email, password: owner.password },
    });
    expect(r.status, r.text).toBe(204);
    const cookie = r.headers.getSetCookie().find((c) => c.startsWith('__Host-tg_session='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Domain=/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/Expires=/);
    // The stored session is a digest: the cookie value is not in the database.
    const value = cookie.split(';')[0]!.split('=')[1]!;
    const rows = await dash.handle.db.selectFrom('dashboard.sessions').select('digest').execute();
    expect(rows.some((row) => row.digest === value)).toBe(false);
    const users = await dash.handle.db.selectFrom('dashboard.users').select('password_hash').execute();
    for (const u of users) expect(u.password_hash ?? 'scrypt$131072$8$1$').toMatch(/^scrypt\$131072\$8\$1\$/);
  });

  it('answers the same 401 for an unknown email and a wrong password', async () => {
    const wrong = await dash.request('POST', '/api/session', {
      body: { email: viewer.email, password: 'not it at all' },
    });
    const unknown = await dash.request('POST', '/api/session', {
      body: { email: 'nobody@example.test', password: 'not it at all' },
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    const bad = await dash.request('POST', '/api/session', { body: { email: 5 } });
    expect(bad.status, bad.text).toBe(400);
    const junk = await dash.request('POST', '/api/session', {
      body: '{"email":',
      headers: { 'content-type': 'application/json' },
    });
    expect(junk.status, junk.text).toBe(400);
  });

  it('GET /api/me names the user, the account and the CSRF token', async () => {
    const r = await ownerSession.call('GET', '/api/me');
    expect(r.body.data).toMatchObject({
      user: { email: owner.email, role: 'owner' },
      account: { id: stack.account.id, slug: stack.account.slug },
      csrf_token: ownerSession.csrf,
    });
  });

  it('a sign-in link works once', async () => {
    const res = await fetch(`${dash.url}/internal/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401); // the CLI's route needs a service token
    // Only the admin CLI's identity may create users. The dashboard trusts no other service's key
    // (401) but the keys service's, for its audit log only (issue 29: `GET /audit`): 403 here.
    for (const name of ['proxy', 'keys', 'billing', 'dashboard'] as const) {
      const other = await fetch(`${dash.url}/internal/users`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SERVICE_TOKEN_HEADER]: await devServiceSigner(name).sign('dashboard'),
        },
        body: JSON.stringify({
          account_id: stack.account.id,
          email: `${name}@x.example`,
          display_name: 'x',
          role: 'owner',
        }),
      });
      expect(other.status, name).toBe(name === 'keys' ? 403 : 401);
    }
    const u = await dash.createUser(stack.account.id, 'viewer');
    const s = await dash.signIn(u);
    expect((await s.call('GET', '/api/me')).status).toBe(200);
    const weak = await dash.request('POST', '/api/invites/accept', {
      body: { token: 'x', password: 'short' },
    });
    expect(weak.status, weak.text).toBe(400);
    const used = await dash.request('POST', '/api/invites/accept', {
      body: { token: 'nope', password: 'long enough password' },
    });
    expect(used.status, used.text).toBe(404);
  });

  it('sign-out ends the session on the server', async () => {
    const s = await dash.signIn(viewer);
    const out = await s.call('DELETE', '/api/session');
    expect(out.status, out.text).toBe(204);
    expect(out.headers.getSetCookie().join()).toMatch(/__Host-tg_session=;/);
    expect((await s.call('GET', '/api/keys')).status).toBe(401);
  });

  it('a session expires after SESSION_TTL_MINUTES', async () => {
    const s = await dash.signIn(viewer);
    expect((await s.call('GET', '/api/me')).status).toBe(200);
    now += 31 * 60_000;
    try {
      expect((await s.call('GET', '/api/me')).status).toBe(401);
    } finally {
      now -= 31 * 60_000;
    }
    expect((await s.call('GET', '/api/me')).status).toBe(401); // deleted, not just hidden
  });
});

describe('CSRF and Origin', () => {
  it.each(WRITE_ROUTES)(
    '%s %s answers 403 without the CSRF token, or with a wrong one',
    async (method, path, body) => {
      for (const csrf of [null, 'wrong-token']) {
        const r = await ownerSession.call(method, path, body, { csrf });
        expect(r.status, r.text).toBe(403);
        expect(r.body.error.metadata.reason).toBe('csrf');
      }
    },
  );

  it.each(WRITE_ROUTES)(
    '%s %s answers 403 from another Origin even with the token',
    async (method, path, body) => {
      const r = await ownerSession.call(method, path, body, { headers: { origin: 'https://evil.example' } });
      expect(r.status, r.text).toBe(403);
      expect(r.body.error.metadata.reason).toBe('origin');
    },
  );

  it('refuses a cross-origin sign-in', async () => {
    const r = await dash.request('POST', '/api/session', {
      body: { email: owner.email, password: owner.password },
      headers: { origin: 'https://evil.example' },
    });
    expect(r.status).toBe(403);
  });

  it('accepts the same Origin', async () => {
    const r = await ownerSession.call('GET', '/api/keys', undefined, { headers: { origin: dash.url } });
    expect(r.status).toBe(200);
  });
});

describe('throttling of failed sign-ins', () => {
  it('a stranger cannot lock out an owner: 50 bad sign-ins from another forwarded address', async () => {
    const u = await dash.createUser(stack.account.id, 'owner');
    const stranger = { 'x-forwarded-for': '203.0.113.50' };
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await dash.request('POST', '/api/session', {
        body: { email: u.email, password: `wrong password ${i}` },
        headers: stranger,
      });
      statuses.push(r.status);
    }
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(new Set(statuses.slice(3))).toEqual(new Set([429]));
    // The owner, from their own address (a forged left entry changes nothing), signs in.
    const owner = await dash.request('POST', '/api/session', {
      body: { email: u.email, password: u.password },
      headers: { 'x-forwarded-for': '203.0.113.50, 198.51.100.60' },
    });
    expect(owner.status, owner.text).toBe(204);
    // The refused attempts left no rows: one for the stranger's (email, address) and one for its address.
    const rows = await dash.handle.db
      .selectFrom('dashboard.sign_in_failures')
      .select(['subject', 'failures'])
      .where('subject', 'like', '%203.0.113.50%')
      .orderBy('subject')
      .execute();
    expect(rows).toEqual([
      { subject: 'ip:203.0.113.50', failures: 3 },
      { subject: `pair:203.0.113.50|${u.email.toLowerCase()}`, failures: 3 },
    ]);
  });

  it('backs off an (email, address) after SIGNIN_MAX_FAILURES failures, even for the right password', async () => {
    const u = await dash.createUser(stack.account.id, 'viewer');
    for (let i = 0; i < 3; i++) {
      const r = await dash.request('POST', '/api/session', {
        body: { email: u.email, password: 'wrong password!' },
      });
      expect(r.status).toBe(401);
    }
    const locked = await dash.request('POST', '/api/session', {
      body: { email: u.email, password: u.password },
    });
    expect(locked.status, locked.text).toBe(429);
    expect(locked.body.error.metadata.error_type).toBe('rate_limited');
    expect(locked.body.error.metadata.retry_after_seconds).toBeGreaterThan(0);
    now += 11 * 60_000;
    try {
      await dash.signIn(u);
    } finally {
      now -= 11 * 60_000;
    }
  });

  it('holds the limit against guesses sent in parallel: no more than SIGNIN_MAX_FAILURES are checked', async () => {
    const u = await dash.createUser(stack.account.id, 'viewer');
    const guesses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        dash.request('POST', '/api/session', { body: { email: u.email, password: `wrong guess ${i}!` } }),
      ),
    );
    const statuses = guesses.map((g) => g.status).sort();
    // Checking the count before recording failures let every parallel guess through (eight 401s).
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(3);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    const right = await dash.request('POST', '/api/session', {
      body: { email: u.email, password: u.password },
    });
    expect(right.status, right.text).toBe(429);
  });
});

describe('roles', () => {
  it.each(WRITE_ROUTES.filter(([, p]) => p !== '/api/session'))(
    'a viewer gets 403 on %s %s',
    async (method, path, body) => {
      const s = await dash.signIn(viewer);
      const r = await s.call(method, path, body);
      expect(r.status, r.text).toBe(403);
      expect(r.body.error.metadata.required_role).toBe('owner');
    },
  );

  it.each(READ_ROUTES.filter((p) => !p.includes('gen-1-')))('a viewer reads GET %s', async (path) => {
    const s = await dash.signIn(viewer);
    const r = await s.call('GET', path);
    expect(r.status, r.text).toBe(200);
  });

  it('an owner invites a viewer, who can then sign in', async () => {
    const r = await ownerSession.call('POST', '/api/users', {
      email: `invited-${Date.now()}@example.test`,
      display_name: 'Invited',
      role: 'viewer',
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.sign_in_link).toMatch(/#\/accept\?token=/);
    const dup = await ownerSession.call('POST', '/api/users', {
      email: r.body.data.email,
      display_name: 'x',
      role: 'viewer',
    });
    expect(dup.status).toBe(409);
    const bad = await ownerSession.call('POST', '/api/users', {
      email: 'nope',
      display_name: 'x',
      role: 'admin',
    });
    expect(bad.status).toBe(400);
    const list = await ownerSession.call('GET', '/api/users');
    expect(list.body.data.find((u: { email: string }) => u.email === r.body.data.email)).toMatchObject({
      invited: true,
    });
  });
});

describe('keys, usage, generations and credits of the account (and only of it)', () => {
  let keyHash: string;
  let requestId: string;

  beforeAll(async () => {
    const created = await ownerSession.call('POST', '/api/keys', {
      name: 'dash inference',
      limit: 3,
      limit_reset: 'daily',
    });
    expect(created.status, created.text).toBe(201);
    keyHash = created.body.data.hash;
    const res = await stack.api('/chat/completions', {
      key: created.body.data.key,
      body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 },
      headers: { 'X-Title': 'Isolation App' },
    });
    expect(res.status, res.text).toBe(200);
    requestId = res.body.id;
    await stack.waitForGeneration(requestId, created.body.data.key);
  });

  it('creates keys with the management option and validates input', async () => {
    const m = await ownerSession.call('POST', '/api/keys', { name: 'ops', management: true });
    expect(m.status, m.text).toBe(201);
    expect(m.body.data).toMatchObject({ scope: 'management', key: expect.stringMatching(/^sk-tg-v1-/) });
    const list = await ownerSession.call('GET', '/api/keys');
    expect(list.body.data.some((k: { hash: string; scope: string }) => k.hash === m.body.data.hash)).toBe(
      true,
    );
    const bad = await ownerSession.call('POST', '/api/keys', { name: 'x', limit: -1 });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.message).toMatch(/^limit:/);
    expect((await ownerSession.call('POST', '/api/keys', [1])).status).toBe(400);
    expect((await ownerSession.call('PATCH', '/api/keys/nope', { disabled: true })).status).toBe(400);
  });

  it('shows the request in generations and in usage by model and by app with its cost', async () => {
    const gens = await ownerSession.call('GET', '/api/generations?limit=5');
    const g = gens.body.data.find((x: { id: string }) => x.id === requestId);
    expect(g, gens.text).toMatchObject({ app: 'Isolation App', key_id: keyHash, model: MODEL });
    const detail = await ownerSession.call('GET', `/api/generations/${requestId}`);
    expect(detail.body.data).toMatchObject({ id: requestId, cost: g.cost });
    // A session filter reaches billing (the request has no session: nothing matches, no 400).
    const session = await ownerSession.call('GET', '/api/generations?session_id=e1e64ac6&limit=5');
    expect(session.status, session.text).toBe(200);
    expect(session.body.data).toEqual([]);
    const byApp = await ownerSession.call('GET', `/api/usage?${RANGE()}&granularity=total&group_by=app`);
    expect(byApp.body.data.rows).toContainEqual(
      expect.objectContaining({ group: 'Isolation App', cost: g.cost, requests: 1 }),
    );
    const csv = await ownerSession.call(
      'GET',
      `/api/usage?${RANGE()}&granularity=day&group_by=key&format=csv`,
    );
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toMatch(/attachment; filename="usage-day-key-/);
    expect(csv.text.split('\r\n')[0]).toBe(
      'bucket,group,group_label,requests,tokens_prompt,tokens_completion,tokens_cached,tokens_cache_write,tokens_reasoning,cost_usd',
    );
    expect(csv.text).toContain(`"${keyHash}","dash inference","1"`);
    const overview = await ownerSession.call('GET', '/api/overview');
    expect(overview.body.data.today.requests).toBeGreaterThanOrEqual(1);
    expect(overview.body.data.top_apps).toContainEqual({ name: 'Isolation App', cost: g.cost, requests: 1 });
    expect(overview.body.data.daily).toHaveLength(30);
  });

  it("never shows or changes another account's data", async () => {
    const s = await dash.signIn(otherOwner);
    const keys = await s.call('GET', '/api/keys?include_revoked=true');
    expect(keys.body.data.map((k: { hash: string }) => k.hash)).toEqual([other.managementKeyId]);
    expect((await s.call('PATCH', `/api/keys/${keyHash}`, { disabled: true })).status).toBe(404);
    expect((await s.call('DELETE', `/api/keys/${keyHash}`)).status).toBe(404);
    expect((await s.call('GET', `/api/generations/${requestId}`)).status).toBe(404);
    expect((await s.call('GET', '/api/generations')).body.data).toEqual([]);
    const usage = await s.call('GET', `/api/usage?${RANGE()}&granularity=total`);
    expect(usage.body.data.rows).toEqual([]);
    const overview = await s.call('GET', '/api/overview');
    expect(overview.body.data.today).toEqual({ cost: '0', requests: 0 });
    expect(overview.body.data.credits.total_credits).toBe('5');
    const credits = await s.call('GET', '/api/credits');
    expect(credits.body.data.ledger.map((e: { amount: string }) => e.amount)).toEqual(['5']);
    const users = await s.call('GET', '/api/users');
    expect(users.body.data.map((u: { email: string }) => u.email)).toEqual([otherOwner.email]);
    expect((await s.call('GET', '/api/me')).body.data.account.id).toBe(other.id);
    // A query parameter cannot name another account: unknown parameters are refused.
    expect((await s.call('GET', `/api/generations?account_id=${stack.account.id}`)).status).toBe(400);
    expect((await s.call('GET', `/api/usage?${RANGE()}&account_id=${stack.account.id}`)).status).toBe(400);
    // The key is untouched.
    const mine = await ownerSession.call('GET', '/api/keys');
    expect(mine.body.data.find((k: { hash: string }) => k.hash === keyHash)).toMatchObject({
      disabled: false,
    });
  });

  it('shows the model catalog with prices per million tokens', async () => {
    const r = await ownerSession.call('GET', '/api/models');
    const m = r.body.data.find((x: { id: string }) => x.id === MODEL);
    const catalog = stack.catalog.model(MODEL)!;
    expect(Number(m.price_per_million.prompt)).toBeCloseTo(Number(catalog.pricing.prompt) * 1e6, 9);
  });

  it('answers 400 for bad analytics input and 503 when billing is unreachable', async () => {
    const r = await ownerSession.call('GET', '/api/usage?from=x&to=y');
    expect(r.status, r.text).toBe(400);
    expect((await ownerSession.call('GET', `/api/usage?${RANGE()}&format=xml`)).status).toBe(400);
    const cut = await startTestDashboard(stack, {
      env: { BILLING_URL: 'http://127.0.0.1:9', SERVICE_TIMEOUT_MS: '500' },
    });
    try {
      const s = await cut.signIn(owner);
      const down = await s.call('GET', '/api/overview');
      expect(down.status, down.text).toBe(503);
      expect(down.text).not.toContain('127.0.0.1');
    } finally {
      await cut.close();
    }
  });
});

describe('serving', () => {
  it('answers /healthz and /readyz, and security headers on every answer', async () => {
    expect((await dash.request('GET', '/healthz')).status).toBe(200);
    const ready = await dash.request('GET', '/readyz');
    expect(ready.body).toEqual({ status: 'ok', checks: { postgres: 'ok' } });
    const r = await dash.request('GET', '/api/me');
    expect(r.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await dash.request('GET', '/api/nothing')).status).toBe(404);
  });

  it('polls until the request is recorded (sanity of the helper)', async () => {
    await vi.waitFor(async () =>
      expect((await ownerSession.call('GET', '/api/generations')).body.data.length).toBeGreaterThan(0),
    );
  });
});
