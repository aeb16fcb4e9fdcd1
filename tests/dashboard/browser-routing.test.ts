/**
 * The dashboard's URLs in Chromium (react-router's HashRouter): every page by its `#/…` address, a
 * generation's deep link, the query-string filters (`#/generations?key_id=…`, `#/usage?group_by=…`),
 * back and forward through pages and through an opened record, an unknown address (the overview), and
 * an invitation's `#/accept?token=…` link, whose token never reaches the server in a URL.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, shoot, signInPage } from '../support/browser';
import { startTestDashboard, type TestDashboard, type TestUser } from '../support/dashboard';
import { MODEL, type Stack, startStack } from '../support/stack';

const PAGES: Array<[string, string]> = [
  ['overview', 'Overview'],
  ['keys', 'Keys'],
  ['usage', 'Usage'],
  ['generations', 'Generations'],
  ['credits', 'Credits'],
  ['models', 'Models'],
  ['users', 'Users'],
  ['alerts', 'Alerts'],
  ['audit', 'Audit log'],
  ['settings', 'Settings'],
];

let stack: Stack;
let dash: TestDashboard;
let browser: Browser;
let owner: TestUser;
let page: Page;
let keyHash = '';
let keyName = '';
let requestId = '';
/** Every URL the browser asked the dashboard for. */
const requested: string[] = [];

const hash = () => page.evaluate(() => window.location.hash);
const heading = () => page.getByRole('heading', { level: 1 }).textContent();
const current = () =>
  page.getByRole('navigation', { name: 'Main' }).locator('[aria-current="page"]').textContent();

describe.skipIf(browserUnavailable)('dashboard URLs in Chromium', () => {
  beforeAll(async () => {
    stack = await startStack();
    dash = await startTestDashboard(stack);
    owner = await dash.createUser(stack.account.id, 'owner');
    const api = await dash.signIn(owner);
    keyName = 'routing key';
    const created = await api.call('POST', '/api/keys', { name: keyName });
    expect(created.status, created.text).toBe(201);
    keyHash = created.body.data.hash;
    const r = await stack.api('/chat/completions', {
      key: created.body.data.key,
      body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
    });
    expect(r.status, r.text).toBe(200);
    requestId = r.body.id;
    await stack.waitForGeneration(requestId, created.body.data.key);
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on('request', (req) => requested.push(req.url()));
    await signInPage(page, dash.url, owner);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await stack?.close();
  });

  it('every page by its address, and by its link in the navigation', async () => {
    for (const [path, title] of PAGES) {
      await page.goto(`${dash.url}/#/${path}`);
      await expect.poll(heading).toBe(title);
      expect(await current()).toBe(title);
    }
    for (const [path, title] of [...PAGES].reverse()) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: title }).click();
      await expect.poll(heading).toBe(title);
      expect(await hash()).toBe(`#/${path}`);
    }
  });

  it('no address or an unknown one shows the overview', async () => {
    for (const url of [dash.url, `${dash.url}/#/`, `${dash.url}/#/nowhere/at/all`]) {
      await page.goto('about:blank');
      await page.goto(url);
      await expect.poll(heading).toBe('Overview');
      expect(await current()).toBe('Overview');
    }
  });

  it("a generation's deep link opens it over the log; closing and back/forward move through it", async () => {
    await page.goto('about:blank');
    await page.goto(`${dash.url}/#/generations/${requestId}`);
    const detail = page.getByTestId('generation-detail');
    await detail.waitFor();
    expect(await detail.textContent()).toContain(requestId);
    expect(await heading()).toBe('Generations');
    await page.keyboard.press('Escape');
    await expect.poll(() => detail.count()).toBe(0);
    expect(await hash()).toBe('#/generations');
    await page.goBack();
    await detail.waitFor();
    expect(await hash()).toBe(`#/generations/${requestId}`);
    await page.goForward();
    await expect.poll(() => detail.count()).toBe(0);
    // Opening a row is a new entry: back closes it.
    await page.getByTestId(`generation-${requestId}`).click();
    await detail.waitFor();
    expect(await hash()).toBe(`#/generations/${requestId}`);
    await shoot(page, 'routing-generation-1280');
    await page.goBack();
    await expect.poll(() => detail.count()).toBe(0);
    expect(await hash()).toBe('#/generations');
  });

  it('query-string filters: a key from the Keys page, a grouping of Usage; back returns to Keys', async () => {
    await page.goto('about:blank');
    await page.goto(`${dash.url}/#/keys`);
    const link = page.getByTestId(`key-${keyName}`).locator('a.traffic');
    expect(await link.getAttribute('href')).toBe(`#/generations?key_id=${keyHash}`);
    await link.click();
    await expect.poll(heading).toBe('Generations');
    expect(await hash()).toBe(`#/generations?key_id=${keyHash}`);
    const filters = page.getByRole('group', { name: 'Filters' });
    await expect.poll(() => filters.getByLabel('Key').inputValue()).toBe(keyHash);
    await page.getByTestId(`generation-${requestId}`).waitFor();
    await page.goBack();
    await expect.poll(heading).toBe('Keys');
    expect(await hash()).toBe('#/keys');
    await page.goForward();
    await expect.poll(heading).toBe('Generations');
    await expect.poll(() => filters.getByLabel('Key').inputValue()).toBe(keyHash);

    await page.goto(`${dash.url}/#/usage?group_by=key`);
    await expect.poll(heading).toBe('Usage');
    expect(await page.getByLabel('Group by').inputValue()).toBe('key');
    await page.goto(`${dash.url}/#/usage?group_by=provider`);
    await expect.poll(() => page.getByLabel('Group by').inputValue()).toBe('provider');
  });

  it("an invitation's link: the token stays in the fragment; choosing a password lands on the overview", async () => {
    const user = await dash.createUser(stack.account.id, 'viewer');
    const api = await dash.signIn(owner);
    const users = await api.call('GET', '/api/users');
    const id = (users.body.data as Array<{ id: string; email: string }>).find(
      (u) => u.email === user.email,
    )!.id;
    const reset = await api.call('POST', `/api/users/${id}/sign-in-link`);
    expect(reset.status, reset.text).toBe(201);
    const link: string = reset.body.data.sign_in_link;
    const token = new URL(link.replace('#/', '')).searchParams.get('token')!;
    const fresh = await (await browser.newContext()).newPage();
    fresh.on('request', (req) => requested.push(req.url()));
    await fresh.goto(link.replace(/^https?:\/\/[^/#]+/, dash.url));
    await fresh.getByRole('form', { name: 'Choose a password' }).waitFor();
    await fresh.getByLabel('New password').fill('a routing test password');
    await fresh.getByRole('button', { name: 'Set password and sign in' }).click();
    await fresh.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await fresh.evaluate(() => window.location.hash)).toBe('#/overview');
    expect(requested.filter((u) => u.includes(token))).toEqual([]);
  });
});
