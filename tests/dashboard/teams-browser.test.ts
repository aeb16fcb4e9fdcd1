/**
 * Teams in the dashboard (issue 29), in a real browser (Debian's Chromium through playwright-core)
 * against the real stack: the Teams page shows each team's committed spend against its limit (the
 * bar keys have, what is left and when it resets) from billing's team spend; an owner adds and
 * removes members (audited); the usage analytics group by team. A team viewer (role `member`) sees
 * only their team — its card, its keys, its usage totals — no Alerts, Users or Overview, and no
 * control that changes anything; the server refuses the rest. Screenshots at 1280 and 390 px wide
 * go to test-results/dashboard/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type BrowserStack,
  browserUnavailable,
  openPage,
  seriousAxeViolations,
  shoot,
  startBrowserStack,
} from '../support/browser';
import type { DashboardSession, TestDashboard, TestUser } from '../support/dashboard';
import { describeResponse, MODEL, type Stack } from '../support/stack';

let b: BrowserStack;
let stack: Stack;
let dash: TestDashboard;
let browser: Browser;
let owner: TestUser;
let ownerApi: DashboardSession;
let viewer: TestUser;
let viewerId: string;
let other: TestUser;
let otherId: string;
let platform: string;
let research: string;
let platformKey: { key: string; hash: string };
let researchKey: { key: string; hash: string };

async function signIn(p: Page, user: TestUser) {
  await p.goto(dash.url);
  await p.getByLabel('Email').fill(user.email);
  await p.getByLabel('Password').fill(user.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('navigation', { name: 'Main' }).waitFor();
}

async function open(p: Page, path: string, heading: string) {
  await openPage(p, dash.url, path);
  await p.getByRole('heading', { level: 1, name: heading }).waitFor();
}

const chat = (key: string) =>
  stack.api('/chat/completions', {
    key,
    body: {
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello from the teams test' }],
      max_tokens: 12,
    },
  });

const userId = async (email: string) =>
  ((await ownerApi.call('GET', '/api/users')).body.data as Array<{ id: string; email: string }>).find(
    (u) => u.email === email,
  )!.id;

/** The page fits the viewport's width (nothing scrolls sideways). */
const fitsWidth = (p: Page) =>
  p.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

// Outside CI a machine without Chromium or a built UI (`make install` builds it) skips; CI never skips.
describe.skipIf(browserUnavailable)('Teams in Chromium', () => {
  beforeAll(async () => {
    b = await startBrowserStack();
    ({ stack, dash, browser, owner, ownerApi } = b);
    viewer = await dash.createUser(stack.account.id, 'viewer');
    other = await dash.createUser(stack.account.id, 'viewer');
    viewerId = await userId(viewer.email);
    otherId = await userId(other.email);
    const team = async (body: Record<string, unknown>) => {
      const r = await stack.api('/teams', { key: stack.account.managementKey, body });
      expect(r.status, describeResponse(r)).toBe(201);
      return r.body.data.id as string;
    };
    platform = await team({ name: 'platform', limit: 2, limit_reset: 'monthly', rate_limit_tpm: 50_000 });
    research = await team({ name: 'research' });
    platformKey = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'platform key',
      team_id: platform,
    });
    researchKey = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'research key',
      team_id: research,
    });
    for (const k of [platformKey, researchKey, platformKey]) {
      const r = await chat(k.key);
      expect(r.status, describeResponse(r)).toBe(200);
    }
    // Billing commits the spend asynchronously: the team figures are there once both teams have some.
    await vi.waitFor(
      async () => {
        const teams = (await ownerApi.call('GET', '/api/teams')).body.data as Array<{ usage: number }>;
        expect(teams.map((t) => t.usage > 0)).toEqual([true, true]);
      },
      { timeout: 15_000, interval: 100 },
    );
  }, 180_000);

  afterAll(() => b?.close());

  it("GET /api/teams: each team's committed spend against its limit, what is left, its members", async () => {
    const teams = (await ownerApi.call('GET', '/api/teams')).body.data as Array<Record<string, unknown>>;
    const p = teams.find((t) => t.id === platform)!;
    expect(p).toMatchObject({ name: 'platform', limit: 2, limit_reset: 'monthly', rate_limit_tpm: 50_000 });
    expect(p.usage as number).toBeGreaterThan(0);
    expect(p.limit_remaining).toBeCloseTo(2 - (p.usage as number), 10);
    expect(teams.find((t) => t.id === research)).toMatchObject({ limit: null, limit_remaining: null });
    // The same figure the management API's key object shows for the team's only key … twice the
    // one request's cost (two requests through the team's key).
    const key = await stack.api(`/keys/${platformKey.hash}`, { key: stack.account.managementKey });
    expect(p.usage).toBeCloseTo(key.body.data.usage, 10);
  });

  it('an owner sees each team with its spend bar, adds and removes members (audited); usage groups by team', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, owner);
    await open(page, 'teams', 'Teams');
    const card = page.getByRole('region', { name: 'Team platform' });
    await card.getByText('of $2.00 this month (UTC)').waitFor();
    await expect(card.getByTestId('remaining').textContent()).resolves.toMatch(/^\$1\.99\d* left$/);
    await card.getByText(/resets /).waitFor();
    await card.getByText('1 key · 50,000 tokens/min').waitFor();
    await page.getByRole('region', { name: 'Team research' }).getByText('no limit').waitFor();

    // Add two members to platform, then remove one.
    for (const u of [viewer, other]) {
      await card.getByLabel('Add a member to platform').selectOption({ label: `Test viewer (${u.email})` });
      await card.getByRole('button', { name: 'Add member' }).click();
      await card.getByRole('list', { name: 'Members of platform' }).getByText(u.email).waitFor();
    }
    await card
      .getByRole('listitem')
      .filter({ hasText: other.email })
      .getByRole('button', { name: 'Remove Test viewer from platform' })
      .click();
    await vi.waitFor(async () => {
      const users = (await ownerApi.call('GET', '/api/users')).body.data as Array<{
        id: string;
        team_ids: string[];
      }>;
      expect(users.filter((u) => u.team_ids.includes(platform)).map((u) => u.id)).toEqual([viewerId]);
    });
    // The page refetches after the change: the removed member leaves the list.
    await card
      .getByRole('list', { name: 'Members of platform' })
      .getByText(other.email)
      .waitFor({ state: 'detached', timeout: 10_000 });
    const audit = await ownerApi.call(
      'GET',
      `/api/audit?source=dashboard&action=user.teams&target_id=${otherId}`,
    );
    expect((audit.body.data as Array<{ after: { teams: string[] } }>).map((e) => e.after.teams)).toEqual([
      [],
      [platform],
    ]);
    await shoot(page, 'teams-owner-1280');
    expect(await seriousAxeViolations(page)).toEqual([]);
    expect(await fitsWidth(page)).toBe(true);

    // The usage analytics by team: one row per team, named.
    await open(page, 'usage?group_by=team', 'Usage');
    await page.getByTestId('usage-platform').waitFor();
    await page.getByTestId('usage-research').waitFor();

    await page.setViewportSize({ width: 390, height: 844 });
    await open(page, 'teams', 'Teams');
    await card.getByText('of $2.00 this month (UTC)').waitFor();
    expect(await fitsWidth(page)).toBe(true);
    await shoot(page, 'teams-owner-390');
  });

  it('an owner creates, changes and deletes a team, and moves a key in and out of it (audited)', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, owner);
    await open(page, 'teams', 'Teams');
    const form = page.getByRole('form', { name: 'Create a team' });
    await form.getByLabel('Name').fill('ops');
    await form.getByLabel('Limit (USD, empty for none)').fill('5');
    await form.getByLabel('Limit reset').selectOption('weekly');
    await form.getByLabel('Tokens per minute (empty for none)').fill('1000');
    await form.getByRole('button', { name: 'Create team' }).click();
    const card = page.getByRole('region', { name: 'Team ops' });
    await card.getByText('of $5.00 this week (UTC, from Monday)').waitFor();
    await card.getByText('0 keys · 1,000 tokens/min').waitFor();
    const teams = (await ownerApi.call('GET', '/api/teams')).body.data as Array<{ id: string; name: string }>;
    const ops = teams.find((t) => t.name === 'ops')!.id;

    // Renamed, a monthly $7 limit, no token rate.
    await card.getByRole('button', { name: 'Edit team ops' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit ops' });
    await dialog.getByLabel('Name').fill('operations');
    await dialog.getByLabel('Limit (USD, empty for none)').fill('7');
    await dialog.getByLabel('Limit reset').selectOption('monthly');
    await dialog.getByLabel('Tokens per minute (empty for none)').fill('');
    await dialog.getByRole('button', { name: 'Save team' }).click();
    const renamed = page.getByRole('region', { name: 'Team operations' });
    await renamed.getByText('of $7.00 this month (UTC)').waitFor();
    await renamed.getByText(/^0 keys · usage$/).waitFor();
    await shoot(page, 'teams-create-edit-1280');

    // A key joins the team from the Keys page.
    const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'ops key' });
    await open(page, 'keys', 'Keys');
    await page.getByRole('button', { name: 'Edit limit and access of ops key' }).click();
    const keyDialog = page.getByRole('dialog', { name: 'Edit ops key' });
    await keyDialog.getByLabel('Team').selectOption({ label: 'operations' });
    await keyDialog.getByRole('button', { name: 'Save limit and access rules' }).click();
    await keyDialog.waitFor({ state: 'detached' });
    const keyTeam = async () =>
      (await stack.api(`/keys/${key.hash}`, { key: stack.account.managementKey })).body.data.team_id;
    await vi.waitFor(async () => expect(await keyTeam()).toBe(ops));

    // A team with a key is not deleted (409 shown); once the key has left, it is.
    await open(page, 'teams', 'Teams');
    await renamed.getByText(/^1 key · usage$/).waitFor();
    await renamed.getByRole('button', { name: 'Edit team operations' }).click();
    const again = page.getByRole('dialog', { name: 'Edit operations' });
    await again.getByRole('button', { name: 'Delete team' }).click();
    await again.getByRole('alert').waitFor();
    await again.getByRole('button', { name: 'Cancel' }).click();
    await open(page, 'keys', 'Keys');
    await page.getByRole('button', { name: 'Edit limit and access of ops key' }).click();
    await keyDialog.getByLabel('Team').selectOption({ label: 'no team' });
    await keyDialog.getByRole('button', { name: 'Save limit and access rules' }).click();
    await vi.waitFor(async () => expect(await keyTeam()).toBeNull());
    await open(page, 'teams', 'Teams');
    await renamed.getByRole('button', { name: 'Edit team operations' }).click();
    await again.getByRole('button', { name: 'Delete team' }).click();
    await renamed.waitFor({ state: 'detached' });

    const audit = await ownerApi.call('GET', `/api/audit?source=keys&target_id=${ops}`);
    expect((audit.body.data as Array<{ action: string }>).map((e) => e.action).sort()).toEqual([
      'team.create',
      'team.delete',
      'team.update',
    ]);
    expect(await seriousAxeViolations(page)).toEqual([]);
  }, 90_000);

  it("a team viewer sees only their team's card, keys and usage totals, and nothing that changes", async () => {
    expect((await ownerApi.call('PATCH', `/api/users/${viewerId}`, { role: 'member' })).status).toBe(204);
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, viewer);
    const nav = page.getByRole('navigation', { name: 'Main' });
    // The nav is drawn from /api/me's role: read it once the page shows that role (the real condition).
    await expect.poll(() => nav.getByTestId('role').textContent()).toBe('member');
    await expect(nav.getByRole('link').allTextContents()).resolves.toEqual([
      'Keys',
      'Usage',
      'Models',
      'Teams',
    ]);
    // Their team's keys only.
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();
    await page.getByText('platform key').first().waitFor();
    await expect(page.getByText('research key').count()).resolves.toBe(0);
    await open(page, 'teams', 'Teams');
    await page
      .getByRole('region', { name: 'Team platform' })
      .getByText('of $2.00 this month (UTC)')
      .waitFor();
    await expect(page.getByRole('region', { name: 'Team research' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: /Add member|Remove/ }).count()).resolves.toBe(0);
    await shoot(page, 'teams-member-1280');
    // Their team's usage totals (the grouping is fixed to team).
    await open(page, 'usage', 'Usage');
    await page.getByTestId('usage-platform').waitFor();
    await expect(page.getByTestId('usage-research').count()).resolves.toBe(0);
    await expect(page.getByRole('alert').count()).resolves.toBe(0);
    // Alerts is not in the nav, and the server refuses it too.
    await page.goto(`${dash.url}/#/alerts`);
    await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor();

    const member = await dash.signIn(viewer);
    const hour = 3_600_000;
    const range = `from=${new Date(Math.floor(Date.now() / hour) * hour - 24 * hour).toISOString()}&to=${new Date(Math.ceil(Date.now() / hour) * hour + hour).toISOString()}&granularity=total`;
    const byTeam = await member.call('GET', `/api/usage?${range}&group_by=team`);
    expect(byTeam.status, byTeam.text).toBe(200);
    expect(byTeam.body.data.rows.map((r: { group: string }) => r.group)).toEqual([platform]);
    const all = await ownerApi.call('GET', `/api/usage?${range}&group_by=team`);
    expect(new Set(all.body.data.rows.map((r: { group: string }) => r.group))).toEqual(
      new Set([platform, research]),
    );
    for (const path of [
      `/api/usage?${range}&group_by=model`,
      `/api/usage?${range}&group_by=team&key_id=${researchKey.hash}`,
      '/api/webhooks',
      '/api/users',
    ])
      expect((await member.call('GET', path)).status, path).toBe(403);
    expect(
      (await member.call('PUT', `/api/users/${viewerId}/teams`, { team_ids: [platform, research] })).status,
    ).toBe(403);
  });
});
