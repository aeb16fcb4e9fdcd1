/**
 * Single sign-on (issue 29) in a real browser (Debian's Chromium through playwright-core) against a
 * real OpenID Connect provider running in-process (`oidc-provider`, its development login form:
 * any login, any password; the test decides each login's groups). The dashboard signs users in with
 * the authorization code flow and PKCE (openid-client):
 * - a first sign-in creates the user with the role its groups map to (owner; team viewer of a team);
 * - a user removed from the group loses access at the next sign-in, and their older sessions end;
 * - PASSWORD_SIGN_IN=false refuses passwords (sign-in and invitations), and the page offers only SSO;
 * - a forged state, a forged nonce, a callback without this browser's cookie and a replayed
 *   callback are refused with a 400 naming the reason;
 * - every SSO sign-in, creation, role change and removal is in the dashboard's audit log.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@tollgate/testkit';
import Provider from 'oidc-provider';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium } from '../support/browser';
import { startTestDashboard, type TestDashboard } from '../support/dashboard';
import { type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let idp: Server;
let issuer: string;
let browser: Browser;
let teamId: string;
/** login → groups, as the identity provider knows them now. */
const groups = new Map<string, string[]>();

const RUN = `${Date.now().toString(36)}`;
const ALICE = `alice-${RUN}`;
const BOB = `bob-${RUN}`;

async function startIdp(redirectUri: string) {
  idp = createServer();
  await new Promise<void>((ok) => idp.listen(0, '127.0.0.1', ok));
  issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'tollgate-dashboard',
        client_secret: 'a-test-client-secret-of-some-length',
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    pkce: { required: () => true },
    cookies: { keys: ['a-test-cookie-key-of-some-length'] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({
        sub: id,
        email: `${id}@corp.example`,
        email_verified: true,
        name: id,
        groups: groups.get(id) ?? [],
      }),
    }),
  });
  idp.on('request', provider.callback());
}

beforeAll(async () => {
  stack = await startStack();
  const team = await stack.api('/teams', {
    key: stack.account.managementKey,
    method: 'POST',
    body: { name: `sso ${RUN}` },
  });
  expect(team.status).toBe(201);
  teamId = team.body.data.id;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  await startIdp(`${url}/api/sso/callback`);
  dash = await startTestDashboard(stack, {
    env: {
      PORT: String(port),
      PUBLIC_URL: url,
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: 'tollgate-dashboard',
      OIDC_CLIENT_SECRET: 'a-test-client-secret-of-some-length',
      OIDC_SCOPES: 'openid email profile groups',
      OIDC_ACCOUNT_ID: stack.account.id,
      OIDC_OWNER_GROUPS: 'tollgate-admins',
      OIDC_VIEWER_GROUPS: 'finance',
      OIDC_TEAM_GROUPS: `eng=${teamId}`,
      OIDC_CREATE_USERS: 'true',
      PASSWORD_SIGN_IN: 'false',
    },
  });
  if (!browserUnavailable) browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await new Promise((ok) => (idp ? idp.close(ok) : ok(undefined)));
  await stack?.close();
});

/** Through the dashboard's SSO button and the provider's login and consent forms. */
async function ssoSignIn(page: Page, login: string) {
  await page.goto(dash.url);
  await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/** Changes one parameter of the authorization request the dashboard's /api/sso/start redirects to. */
async function forgeAuthorizeParam(page: Page, name: string, value: string) {
  await page.route(`${dash.url}/api/sso/start`, async (route) => {
    const response = await route.fetch({ maxRedirects: 0 });
    const location = new URL(response.headers().location as string);
    location.searchParams.set(name, value);
    await route.fulfill({ response, headers: { ...response.headers(), location: location.href } });
  });
}

const usersOf = async (page: Page) => {
  const res = await page.request.get(`${dash.url}/api/users`);
  return (await res.json()).data as Array<{ id: string; email: string; role: string; teams?: string[] }>;
};

// Each test signs in through the provider's forms several times: minutes on a loaded machine.
describe.skipIf(browserUnavailable)('single sign-on (OIDC, in the browser)', { timeout: 180_000 }, () => {
  it('offers only SSO when password sign-in is off, and refuses passwords', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(dash.url);
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    expect(await page.getByLabel('Password').count()).toBe(0);
    const refused = await dash.request('POST', '/api/session', {
      body: { email: 'someone@corp.example', password: 'a long enough password' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.metadata.reason).toBe('password_sign_in_off');
    await expect(dash.createUser(stack.account.id, 'viewer')).rejects.toThrow(/accept: HTTP 403/);
    await page.context().close();
  });

  it('a first sign-in creates the user with the mapped role; team groups make team viewers', async () => {
    groups.set(ALICE, ['tollgate-admins', 'eng']);
    groups.set(BOB, ['eng', 'unrelated']);
    const alice = await (await browser.newContext()).newPage();
    await ssoSignIn(alice, ALICE);
    await alice.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await alice.getByTestId('role').textContent()).toBe('owner');

    const bob = await (await browser.newContext()).newPage();
    await ssoSignIn(bob, BOB);
    await bob.getByRole('heading', { level: 1 }).waitFor();
    expect(await bob.getByTestId('role').textContent()).toBe('member');

    const users = await usersOf(alice);
    expect(users.find((u) => u.email === `${ALICE}@corp.example`)?.role).toBe('owner');
    expect(users.find((u) => u.email === `${BOB}@corp.example`)?.role).toBe('member');
    await bob.context().close();
    // Alice's first session stays open for the next test.
    (globalThis as { aliceFirst?: Page }).aliceFirst = alice;
  });

  it('a user removed from the group loses access at the next sign-in, older sessions too', async () => {
    const first = (globalThis as { aliceFirst?: Page }).aliceFirst as Page;
    // Demoted first (owner → viewer): the next sign-in changes the role.
    groups.set(ALICE, ['finance']);
    const again = await (await browser.newContext()).newPage();
    await ssoSignIn(again, ALICE);
    await again.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await again.getByTestId('role').textContent()).toBe('viewer');
    await again.context().close();

    // Removed from every mapped group: refused, and the user is gone with their sessions.
    groups.set(ALICE, ['unrelated']);
    const last = await (await browser.newContext()).newPage();
    const answer = last.waitForResponse((r) => r.url().startsWith(`${dash.url}/api/sso/callback`));
    await ssoSignIn(last, ALICE);
    const refused = await answer;
    expect(refused.status()).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { metadata: { reason: 'sso_no_access' } } });
    expect((await first.request.get(`${dash.url}/api/me`)).status()).toBe(401);
    await first.reload();
    await first.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    await first.context().close();
    await last.context().close();

    // Every step is in the dashboard's audit log, as the signing-in user.
    groups.set(BOB, ['tollgate-admins']);
    const bob = await (await browser.newContext()).newPage();
    await ssoSignIn(bob, BOB);
    await bob.getByRole('heading', { name: 'Overview' }).waitFor();
    const audit = await bob.request.get(`${dash.url}/api/audit?source=dashboard&limit=100`);
    const entries = ((await audit.json()).data as Array<{ action: string; after: unknown; before: unknown }>)
      .filter((e) => JSON.stringify([e.before, e.after]).includes(ALICE))
      .map((e) => e.action)
      .reverse();
    expect(entries).toEqual([
      'sso.user_create',
      'sso.sign_in',
      'sso.role',
      'sso.teams',
      'sso.sign_in',
      'sso.access_removed',
    ]);
    await bob.context().close();
  });

  it('a forged state or nonce, a missing cookie and a replayed callback are refused with a 400', async () => {
    groups.set(BOB, ['tollgate-admins']);
    // A forged state: the provider sends back what it was given, which is not this browser's.
    const page = await (await browser.newContext()).newPage();
    await forgeAuthorizeParam(page, 'state', 'forged-state');
    const stateAnswer = page.waitForResponse((r) => r.url().startsWith(`${dash.url}/api/sso/callback`));
    await ssoSignIn(page, BOB);
    const badState = await stateAnswer;
    expect(badState.status()).toBe(400);
    expect(await badState.json()).toMatchObject({
      error: { message: expect.stringMatching(/state/), metadata: { reason: 'sso_state' } },
    });
    await page.context().close();

    // A forged nonce on the way out: the ID token then carries it, and the check refuses it.
    const nonce = await (await browser.newContext()).newPage();
    await forgeAuthorizeParam(nonce, 'nonce', 'forged-nonce');
    const nonceAnswer = nonce.waitForResponse((r) => r.url().startsWith(`${dash.url}/api/sso/callback`));
    await ssoSignIn(nonce, BOB);
    const badNonce = await nonceAnswer;
    expect(badNonce.status()).toBe(400);
    expect(await badNonce.json()).toMatchObject({ error: { metadata: { reason: 'sso_response' } } });
    expect((await nonce.request.get(`${dash.url}/api/me`)).status()).toBe(401);

    // The same callback again (replayed) or from another browser (no cookie): 400.
    const replay = await nonce.request.get(badNonce.url(), { maxRedirects: 0 });
    expect(replay.status()).toBe(400);
    const stranger = await fetch(badNonce.url(), { redirect: 'manual' });
    expect(stranger.status).toBe(400);
    expect(((await stranger.json()) as { error: { message: string } }).error.message).toMatch(/cookie/);
    await nonce.context().close();
  });
});
