/**
 * The admin CLI's dashboard commands against the real stack: `users create` makes an account's first
 * owner through the dashboard's internal API and prints a one-time sign-in link that works once;
 * the CLI finds billing and the dashboard at the `make dev` addresses unless told otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../services/keys/src/cli/command';
import { commandGroups } from '../../services/keys/src/cli/main';
import { DEV_URLS, serviceUrls } from '../../services/keys/src/cli/service-call';
import { startTestDashboard, type TestDashboard } from '../support/dashboard';
import { type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;

beforeAll(async () => {
  stack = await startStack();
  dash = await startTestDashboard(stack);
});
afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, commandGroups, {
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
      DASHBOARD_URL: dash.url,
      BILLING_URL: stack.services.billing.url,
      ...env,
    },
  });
  return { code, stdout, stderr };
}

describe('tollgate users create', () => {
  it('creates an owner and prints a one-time sign-in link that signs them in', async () => {
    const email = `first-owner-${Date.now()}@example.test`;
    const r = await cli([
      'users',
      'create',
      '--account',
      stack.account.slug,
      '--email',
      email,
      '--role',
      'owner',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Created owner ${email} of ${stack.account.slug}.`);
    const link = /(http\S+#\/accept\?token=\S+)/.exec(r.stdout)?.[1];
    expect(link, r.stdout).toBeDefined();
    const token = new URLSearchParams(link!.split('?')[1]).get('token')!;
    const password = 'a long enough password';
    const accepted = await dash.request('POST', '/api/invites/accept', { body: { token, password } });
    expect(accepted.status, accepted.text).toBe(204);
    const again = await dash.request('POST', '/api/invites/accept', { body: { token, password } });
    expect(again.status).toBe(404);
    const session = await dash.signIn({ email, password });
    const me = await session.call('GET', '/api/me');
    expect(me.body.data).toMatchObject({ user: { email, role: 'owner' }, account: { id: stack.account.id } });
  });

  it('answers --json, refuses a bad role, an unknown account and a taken email', async () => {
    const email = `json-${Date.now()}@example.test`;
    const r = await cli([
      'users',
      'create',
      '--account',
      stack.account.slug,
      '--email',
      email,
      '--role',
      'viewer',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).data).toMatchObject({ email, role: 'viewer', account: stack.account.slug });
    const taken = await cli([
      'users',
      'create',
      '--account',
      stack.account.slug,
      '--email',
      email,
      '--role',
      'viewer',
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/already exists/);
    const role = await cli([
      'users',
      'create',
      '--account',
      stack.account.slug,
      '--email',
      'x@example.test',
      '--role',
      'admin',
    ]);
    expect(role.code).toBe(2);
    const unknown = await cli([
      'users',
      'create',
      '--account',
      'no-such-account',
      '--email',
      'x@example.test',
      '--role',
      'owner',
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no-such-account/);
  });

  it('names the address and the variable when the dashboard does not answer', async () => {
    const r = await cli(
      ['users', 'create', '--account', stack.account.slug, '--email', 'y@example.test', '--role', 'owner'],
      {
        DASHBOARD_URL: 'http://127.0.0.1:9',
      },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/dashboard at http:\/\/127\.0\.0\.1:9 did not answer.*DASHBOARD_URL/);
  });
});

describe('CLI service addresses', () => {
  it('default to the make dev addresses (credits add works without exporting BILLING_URL)', () => {
    expect(serviceUrls({})).toEqual({ billing: 'http://127.0.0.1:8082', dashboard: 'http://127.0.0.1:8083' });
    expect(DEV_URLS.billing).toBe('http://127.0.0.1:8082');
    expect(serviceUrls({ BILLING_URL: 'http://b:1/', DASHBOARD_URL: ' ' })).toEqual({
      billing: 'http://b:1',
      dashboard: 'http://127.0.0.1:8083',
    });
  });

  it('credits add reaches billing at BILLING_URL', async () => {
    const r = await cli(['credits', 'add', '--account', stack.account.slug, '--amount', '2.5']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Added 2.5 USD/);
  });
});

describe('tollgate demo bootstrap (make demo, the compose demo step)', () => {
  it('makes a ready account once: credits only when new, keys that work, an owner with a sign-in link', async () => {
    const account = `demo-${Date.now().toString(36)}`;
    const args = ['demo', 'bootstrap', '--account', account, '--proxy-url', stack.baseUrl, '--json'];
    const first = await cli(args);
    expect(first.code, first.stderr).toBe(0);
    const d = JSON.parse(first.stdout).data;
    expect(d).toMatchObject({ account, created: true, credits_granted: '10', api_base: stack.baseUrl });
    expect(d.sign_in_link).toMatch(/#\/accept\?token=/);
    const credits = await stack.api('/credits', { key: d.management_key });
    expect(credits.body.data.total_credits).toBe(10);
    const chat = await stack.api('/chat/completions', {
      key: d.inference_key,
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 5 },
    });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    const limits = await stack.api('/key', { key: d.inference_key });
    expect(limits.body.data).toMatchObject({ limit: 5, limit_reset: 'daily' });

    const again = await cli(args);
    expect(again.code, again.stderr).toBe(0);
    const d2 = JSON.parse(again.stdout).data;
    expect(d2).toMatchObject({ account, created: false, credits_granted: '0' });
    expect(d2.inference_key).not.toBe(d.inference_key);
    expect(d2.owner_email).not.toBe(d.owner_email);
    expect((await stack.api('/credits', { key: d2.management_key })).body.data.total_credits).toBe(10);

    const text = await cli(['demo', 'bootstrap', '--account', account, '--proxy-url', stack.baseUrl]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`curl ${stack.baseUrl}/chat/completions`);
  });

  it('says which address to fix when the gateway does not answer, and refuses bad credits', async () => {
    const down = await cli([
      'demo',
      'bootstrap',
      '--account',
      'demo-down',
      '--proxy-url',
      'http://127.0.0.1:9',
    ]);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/gateway at http:\/\/127\.0\.0\.1:9 did not answer/);
    // Nothing was created: the account's first real bootstrap still gets its credits.
    const created = await cli(['accounts', 'create', '--slug', 'demo-down', '--name', 'x']);
    expect(created.code, created.stderr).toBe(0);
    const bad = await cli(['demo', 'bootstrap', '--account', 'demo-bad', '--credits', 'ten']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--credits/);
    expect((await cli(['accounts', 'create', '--slug', 'demo-bad', '--name', 'x'])).code).toBe(0);
  });
});
