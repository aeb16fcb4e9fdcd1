/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against the real
 * stack: provider simulator, keys, billing, proxy and the dashboard, on Postgres/Redis/RabbitMQ.
 *
 * An owner signs in, creates a management key (the checkbox) and an inference key, the inference key
 * is used through the proxy with an X-Title, and within seconds the request shows in Generations and
 * in usage by model and by app with its exact cost; disable, enable and revoke take effect at the
 * proxy; a viewer can change nothing; sign-out ends the session. Every page is photographed at
 * 1280 px and 390 px into test-results/dashboard/ (git-ignored).
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usd } from '../../services/dashboard/ui/src/format';
import {
  browserUnavailable,
  launchChromium,
  openPage as openAt,
  shoot,
  signInPage,
} from '../support/browser';
import { startTestDashboard, type TestDashboard, type TestUser } from '../support/dashboard';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let browser: Browser;
let owner: TestUser;
let viewer: TestUser;
let ownerContext: BrowserContext;
let page: Page;

const PAGES = ['overview', 'keys', 'usage', 'generations', 'credits', 'models', 'users'] as const;

const signIn = (p: Page, user: TestUser) => signInPage(p, dash.url, user);
const openPage = (p: Page, path: (typeof PAGES)[number]) => openAt(p, dash.url, path);

/** Creates a key through the form; returns the plaintext shown once. */
async function createKey(p: Page, o: { name: string; management?: boolean; limit?: string }) {
  const form = p.getByRole('form', { name: 'Create a key' });
  await form.getByLabel('Name').fill(o.name);
  if (o.limit) {
    await form.getByLabel('Limit (USD)').fill(o.limit);
    await form.getByLabel('Limit reset').selectOption('daily');
  }
  if (o.management) await form.getByLabel(/Management key/).check();
  await form.getByRole('button', { name: 'Create key' }).click();
  const secret = p.getByTestId('new-key');
  await secret.waitFor();
  const key = (await secret.textContent())!.trim();
  await shoot(p, `keys-created-${o.management ? 'management' : 'inference'}`);
  await p.getByRole('button', { name: 'Done' }).click();
  return key;
}

const chat = (key: string, title: string) =>
  stack.api('/chat/completions', {
    key,
    body: {
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello from the browser test' }],
      max_tokens: 12,
    },
    headers: { 'X-Title': title },
  });

describe.skipIf(browserUnavailable)('the dashboard in Chromium', () => {
  beforeAll(async () => {
    stack = await startStack();
    dash = await startTestDashboard(stack);
    owner = await dash.createUser(stack.account.id, 'owner');
    viewer = await dash.createUser(stack.account.id, 'viewer');
    browser = await launchChromium();
    ownerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await ownerContext.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await stack?.close();
  });

  let managementKey: string;
  let inferenceKey: string;
  let requestId: string;
  let cost: number;
  const APP = 'Browser Test App';

  it('an owner signs in and sees the overview', async () => {
    await page.goto(dash.url);
    await page.getByRole('form', { name: 'Sign in' }).waitFor();
    await shoot(page, 'sign-in-1280');
    // A wrong password is refused on the page.
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('definitely wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password' }).waitFor();
    await signIn(page, owner);
    expect(await page.getByTestId('role').textContent()).toBe('owner');
    await page.getByTestId('spend-chart').locator('svg').first().waitFor();
    await shoot(page, 'overview-empty-1280');
  });

  it('creates a management key with the checkbox and an inference key; the plaintext is shown once', async () => {
    await openPage(page, 'keys');
    managementKey = await createKey(page, { name: 'browser ops', management: true });
    inferenceKey = await createKey(page, { name: 'browser app', limit: '5' });
    expect(managementKey).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(inferenceKey).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    const opsRow = page.getByTestId('key-browser ops');
    await expect.poll(() => opsRow.textContent()).toContain('management');
    const appRow = page.getByTestId('key-browser app');
    await expect.poll(() => appRow.textContent()).toContain('of $5.00 today (UTC)');
    // The plaintext is not on the page any more.
    expect(await page.content()).not.toContain(inferenceKey);
    // The management key manages keys through the API; it cannot run models.
    expect((await stack.api('/keys', { key: managementKey })).status).toBe(200);
    expect((await chat(managementKey, APP)).status).toBe(403);
  });

  it('a request through the proxy with an X-Title shows within seconds in Generations and usage, with its cost', async () => {
    const res = await chat(inferenceKey, APP);
    expect(res.status, res.text).toBe(200);
    requestId = res.body.id;
    cost = res.body.usage.cost;
    expect(cost).toBeGreaterThan(0);
    const started = Date.now();

    await openPage(page, 'generations');
    const row = page.getByTestId(`generation-${requestId}`);
    await expect
      .poll(
        async () => {
          if ((await row.count()) === 0) await page.getByRole('button', { name: 'Refresh' }).click();
          return row.count();
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBe(1);
    const seenAfterMs = Date.now() - started;
    expect(seenAfterMs).toBeLessThan(10_000);
    // The key's name comes with the key list, which may arrive after the row (its id prefix until then).
    await expect
      .poll(async () => (await row.textContent()) ?? '', { timeout: 10_000 })
      .toContain('browser app');
    const text = (await row.textContent()) ?? '';
    expect(text).toContain(APP);
    expect(text).toContain(MODEL);
    expect(text).toContain(usd(cost));
    await shoot(page, 'generations-1280');
    await row.click();
    const detail = page.getByTestId('generation-detail');
    await detail.waitFor();
    const detailText = (await detail.textContent()) ?? '';
    expect(detailText).toContain(requestId);
    const exact = /\(([0-9.]+) USD\)/.exec(detailText)?.[1];
    expect(Number(exact)).toBe(cost);
    expect(detailText).toContain('provider'); // usage_source
    await shoot(page, 'generation-detail-1280');
    await page.getByRole('button', { name: 'Close' }).click();

    await openPage(page, 'usage');
    await page.getByLabel('Group by').selectOption('model');
    const byModel = page.getByTestId(`usage-${MODEL}`);
    await expect
      .poll(async () => (await byModel.count()) && byModel.textContent(), { timeout: 10_000 })
      .toContain(usd(cost));
    await page.getByTestId('usage-chart').locator('.recharts-bar-rectangle').first().waitFor();
    await shoot(page, 'usage-by-model-1280');
    await page.getByLabel('Group by').selectOption('app');
    const byApp = page.getByTestId(`usage-${APP}`);
    await expect
      .poll(async () => (await byApp.count()) && byApp.textContent(), { timeout: 10_000 })
      .toContain(usd(cost));
    expect(await byApp.textContent()).toContain('1'); // one request
    await shoot(page, 'usage-by-app-1280');

    // The CSV export carries the same figures.
    const href = await page.getByTestId('csv-export').getAttribute('href');
    const csv = await page.evaluate(async (h) => (await fetch(h!)).text(), href);
    expect(csv).toContain(`"${APP}"`);

    await openPage(page, 'overview');
    await expect
      .poll(() => page.getByTestId('spend-today').textContent(), { timeout: 10_000 })
      .toContain(usd(cost));
    await shoot(page, 'overview-1280');
  });

  it('disable, re-enable and revoke take effect at the proxy', async () => {
    await openPage(page, 'keys');
    const row = page.getByTestId('key-browser app');
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.textContent()).toContain('disabled');
    expect((await chat(inferenceKey, APP)).status).toBe(401);
    await row.getByRole('button', { name: 'Enable' }).click();
    await expect.poll(() => row.textContent()).toContain('active');
    expect((await chat(inferenceKey, APP)).status).toBe(200);

    // Edit the limit and the access rules (issue 9): only gpt-4o-mini, 50 requests per minute.
    await row.getByRole('button', { name: 'Edit limit' }).click();
    await page.getByLabel('Limit (USD, empty for none)').fill('7.5');
    const dialog = page.getByRole('dialog', { name: 'Edit browser app' });
    await dialog.getByRole('checkbox', { name: MODEL, exact: true }).check();
    await dialog.getByLabel(/Rate limit/).fill('50');
    await page.getByRole('button', { name: 'Save limit' }).click();
    await expect.poll(() => row.textContent()).toContain('of $7.50 today (UTC)');
    await expect.poll(() => row.textContent()).toContain(`${MODEL} · 50 rpm`);
    expect((await chat(inferenceKey, APP)).status).toBe(200);
    const other = await stack.api('/chat/completions', {
      key: inferenceKey,
      body: { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
    });
    expect(other.status).toBe(403);
    await shoot(page, 'keys-1280');

    // Revoke, with confirmation; cancel first.
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog', { name: 'Revoke key' }).waitFor();
    await shoot(page, 'keys-revoke-confirm-1280');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect((await chat(inferenceKey, APP)).status).toBe(200);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Revoke permanently' }).click();
    await expect.poll(() => page.getByTestId('key-browser app').count()).toBe(0);
    expect((await chat(inferenceKey, APP)).status).toBe(401);

    // A management key is revoked in the dashboard too.
    await page.getByTestId('key-browser ops').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Revoke permanently' }).click();
    await expect.poll(() => page.getByTestId('key-browser ops').count()).toBe(0);
    expect((await stack.api('/keys', { key: managementKey })).status).toBe(401);
    await page.getByLabel('Show revoked').check();
    await expect.poll(() => page.getByTestId('key-browser app').textContent()).toContain('revoked');
  });

  it('photographs every page at 1280 px and 390 px', async () => {
    for (const path of PAGES) {
      await openPage(page, path);
      await page.waitForLoadState('networkidle');
      await shoot(page, `${path}-1280`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of PAGES) {
      await openPage(page, path);
      await page.waitForLoadState('networkidle');
      await shoot(page, `${path}-390`);
      // Nothing wider than the screen but the scrolling tables.
      const overflow = (await page.evaluate(
        'document.documentElement.scrollWidth - window.innerWidth',
      )) as number;
      expect(overflow, `${path} overflows at 390 px`).toBeLessThanOrEqual(1);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('a viewer sees everything and can change nothing', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await context.newPage();
    try {
      await signIn(p, viewer);
      expect(await p.getByTestId('role').textContent()).toBe('viewer');
      await openPage(p, 'keys');
      await p.getByTestId('viewer-note').waitFor();
      await p.getByLabel('Show revoked').check();
      await expect.poll(() => p.getByTestId('key-browser app').count()).toBe(1);
      expect(await p.getByRole('form', { name: 'Create a key' }).count()).toBe(0);
      expect(await p.getByRole('button', { name: /Disable|Enable|Revoke|Edit limit/ }).count()).toBe(0);
      await shoot(p, 'keys-viewer-1280');
      await openPage(p, 'generations');
      await expect.poll(() => p.getByTestId(`generation-${requestId}`).count()).toBe(1);
      // Even a hand-made request from the page (with the CSRF token) is refused.
      const status = await p.evaluate(async () => {
        const me = (await (await fetch('/api/me')).json()) as { data: { csrf_token: string } };
        const r = await fetch('/api/keys', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': me.data.csrf_token },
          body: JSON.stringify({ name: 'sneaky' }),
        });
        return r.status;
      });
      expect(status).toBe(403);
      await openPage(p, 'users');
      expect(await p.getByRole('form', { name: 'Invite a user' }).count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('sign-out ends the session', async () => {
    const cookies = await ownerContext.cookies();
    const session = cookies.find((c) => c.name === '__Host-tg_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await openPage(page, 'overview');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('form', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('form', { name: 'Sign in' }).waitFor();
    // The old cookie value is dead on the server, not just forgotten by the browser.
    const r = await dash.request('GET', '/api/me', {
      headers: { cookie: `__Host-tg_session=${session!.value}` },
    });
    expect(r.status).toBe(401);
  });
});
