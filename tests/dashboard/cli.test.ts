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
