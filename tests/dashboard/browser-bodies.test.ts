/// <reference lib="dom" />
/**
 * Issue 28 in Chromium against the real stack: opt-in bodies turned on in the key editor and shown,
 * redacted, in the generation detail (a key without them says nothing was kept); the account's switch
 * on the Settings page keeps them for a key without its own flag while on (audited), and not once off;
 * the custom date
 * range of Usage and Generations; times in the viewer's zone (America/New_York here), labelled, while
 * the periods stay UTC and say so. Screenshots in test-results/dashboard/bodies-*; axe-core finds no
 * serious violation in the detail view at 1280 and 390 px.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browserUnavailable,
  launchChromium,
  openPage,
  seriousAxeViolations,
  shoot,
  signInPage,
} from '../support/browser';
import {
  type DashboardSession,
  startTestDashboard,
  type TestDashboard,
  type TestUser,
} from '../support/dashboard';
import { MODEL, type Stack, startStack } from '../support/stack';

const ZONE = 'America/New_York';
const SECRET = `sk-live-${'7'.repeat(30)}`;
const EMAIL = 'grace.hopper@example.org';

let stack: Stack;
let dash: TestDashboard;
let browser: Browser;
let owner: TestUser;
let ownerApi: DashboardSession;
let context: BrowserContext;
let page: Page;

async function chat(key: string, content: string) {
  const r = await stack.api('/chat/completions', {
    key,
    body: { model: MODEL, messages: [{ role: 'user', content }], max_tokens: 8 },
  });
  if (r.status !== 200) throw new Error(`chat: HTTP ${r.status} ${r.text}`);
  await stack.waitForGeneration(r.body.id as string, key);
  return { id: r.body.id as string, text: r.body.choices[0].message.content as string };
}

describe.skipIf(browserUnavailable)('opt-in bodies and time in Chromium', () => {
  beforeAll(async () => {
    stack = await startStack();
    dash = await startTestDashboard(stack);
    owner = await dash.createUser(stack.account.id, 'owner');
    ownerApi = await dash.signIn(owner);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: ZONE });
    page = await context.newPage();
    await signInPage(page, dash.url, owner);
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await dash?.close();
    await stack?.close();
  }, 120_000);

  it('the key editor turns bodies on; the detail view shows the prompt and answer, redacted', async () => {
    const created = await ownerApi.call('POST', '/api/keys', { name: 'kept' });
    const { hash, key } = created.body.data as { hash: string; key: string };
    expect(created.body.data.store_bodies).toBe(false);
    await openPage(page, dash.url, 'keys');
    await page.getByTestId('key-kept').getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel(/Keep prompts and answers/).check();
    await dialog.getByRole('button', { name: /^Save/ }).click();
    await expect
      .poll(async () => {
        const keys = await ownerApi.call('GET', '/api/keys');
        return (keys.body.data as Array<{ hash: string; store_bodies: boolean }>).find((k) => k.hash === hash)
          ?.store_bodies;
      })
      .toBe(true);
    await expect.poll(() => page.getByTestId('key-kept').textContent()).toContain('keeps bodies');

    const kept = await chat(key, `Reach me at ${EMAIL}, token ${SECRET}. <b>bold</b>`);
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await openPage(page, dash.url, `generations/${kept.id}`, { fresh: true });
      const prompt = page.getByTestId('generation-prompt');
      await prompt.waitFor();
      const shown = (await prompt.textContent()) ?? '';
      expect(shown).toContain('Reach me at [REDACTED], token [REDACTED]. <b>bold</b>');
      expect(shown).not.toContain(EMAIL);
      expect(shown).not.toContain(SECRET);
      // Rendered as text: the markup in the prompt is not an element.
      expect(await prompt.locator('b').count()).toBe(0);
      expect(await page.getByTestId('generation-answer').textContent()).toBe(kept.text);
      expect(await seriousAxeViolations(page)).toEqual([]);
      await shoot(page, `bodies-detail-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('a key without bodies (the default) keeps nothing, and the detail view says so', async () => {
    const created = await ownerApi.call('POST', '/api/keys', { name: 'plain' });
    const plain = await chat(created.body.data.key, `Mail ${EMAIL}`);
    await openPage(page, dash.url, `generations/${plain.id}`, { fresh: true });
    await page.getByTestId('generation-bodies-off').waitFor();
    expect(await page.getByTestId('generation-prompt').count()).toBe(0);
    expect(await page.getByTestId('generation-detail').textContent()).not.toContain(EMAIL);
  });

  it('the Settings page keeps every key’s bodies while the account switch is on (audited), and not once off', async () => {
    const created = await ownerApi.call('POST', '/api/keys', { name: 'no flag' });
    const { key } = created.body.data as { key: string };
    expect(created.body.data.store_bodies).toBe(false);
    const accountSwitch = page.getByLabel('Keep prompts and answers of every key');
    const setSwitch = async (on: boolean) => {
      await openPage(page, dash.url, 'settings', { fresh: true });
      expect(await accountSwitch.isChecked()).toBe(!on);
      // The box follows the server's answer (not the click), so a click, not check().
      await accountSwitch.click();
      await expect
        .poll(async () => (await ownerApi.call('GET', '/api/me')).body.data.account.store_bodies)
        .toBe(on);
      // The page shows what the server answered.
      await expect.poll(() => accountSwitch.isChecked()).toBe(on);
    };

    await setSwitch(true);
    await shoot(page, 'settings-1280');
    const kept = await chat(key, `Account-wide, mail ${EMAIL}`);
    await openPage(page, dash.url, `generations/${kept.id}`, { fresh: true });
    const prompt = page.getByTestId('generation-prompt');
    await prompt.waitFor();
    expect(await prompt.textContent()).toContain('Account-wide, mail [REDACTED]');
    expect(await page.getByTestId('generation-answer').textContent()).toBe(kept.text);

    await setSwitch(false);
    const dropped = await chat(key, `Not kept, mail ${EMAIL}`);
    await openPage(page, dash.url, `generations/${dropped.id}`, { fresh: true });
    await page.getByTestId('generation-bodies-off').waitFor();

    // Both changes are audited for the signed-in owner, newest first.
    const audit = await ownerApi.call('GET', '/api/audit?source=keys&action=account.update');
    expect(audit.status, audit.text).toBe(200);
    const me = (await ownerApi.call('GET', '/api/me')).body.data;
    expect(audit.body.data.slice(0, 2)).toMatchObject([
      {
        actor: { kind: 'user', id: me.user.id },
        before: { store_bodies: true },
        after: { store_bodies: false },
      },
      {
        actor: { kind: 'user', id: me.user.id },
        before: { store_bodies: false },
        after: { store_bodies: true },
      },
    ]);
    await openPage(page, dash.url, 'audit', { fresh: true });
    await expect.poll(() => page.getByText('store_bodies: false → true').count()).toBeGreaterThan(0);

    // A viewer sees the setting and cannot change it (the server refuses too).
    const viewer = await dash.createUser(stack.account.id, 'viewer');
    const viewerApi = await dash.signIn(viewer);
    const refused = await viewerApi.call('PATCH', '/api/account', { store_bodies: true });
    expect(refused.status, refused.text).toBe(403);
    const bad = await ownerApi.call('PATCH', '/api/account', { store_bodies: 'yes' });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.message).toMatch(/store_bodies/);
    const vctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const vpage = await vctx.newPage();
    await signInPage(vpage, dash.url, viewer);
    await openPage(vpage, dash.url, 'settings');
    expect(await vpage.getByLabel('Keep prompts and answers of every key').isDisabled()).toBe(true);
    expect(await seriousAxeViolations(vpage)).toEqual([]);
    await vctx.close();
  });

  it('custom date ranges on Usage (UTC days) and Generations (the viewer’s time), times labelled with the zone', async () => {
    const { id } = await chat(stack.inferenceKey, 'timed');
    const requests: URL[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/')) requests.push(new URL(r.url()));
    });
    const last = (path: string) => [...requests].reverse().find((u) => u.pathname === path)?.searchParams;
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

    await openPage(page, dash.url, 'usage', { fresh: true });
    const controls = page.getByRole('group', { name: 'Usage controls' });
    await controls.locator('select').first().selectOption('custom');
    await controls.getByLabel('From (UTC day)').fill(today);
    await controls.getByLabel('To (UTC day, included)').fill(today);
    await expect.poll(() => last('/api/usage')?.get('from')).toBe(`${today}T00:00:00.000Z`);
    expect(last('/api/usage')?.get('to')).toBe(`${tomorrow}T00:00:00.000Z`);
    await expect.poll(() => page.getByTestId(`usage-${MODEL}`).count()).toBe(1);
    expect(await page.getByTestId('usage-range').textContent()).toContain('UTC');
    await controls.getByLabel('From (UTC day)').fill(yesterday);
    await controls.getByLabel('To (UTC day, included)').fill(yesterday);
    await expect.poll(() => last('/api/usage')?.get('to')).toBe(`${today}T00:00:00.000Z`);
    await expect.poll(() => page.getByText('No usage in this range.').count()).toBe(1);
    await controls.getByLabel('From (UTC day)').fill(today);
    expect(await page.getByTestId('range-error').textContent()).toMatch(/ends before it starts/);
    await shoot(page, 'bodies-usage-custom-range-1280');

    // Generations: the pickers are in the viewer's zone (labelled), sent as UTC instants.
    const local = (ms: number) => {
      const p = Object.fromEntries(
        new Intl.DateTimeFormat('en-CA', {
          timeZone: ZONE,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          hourCycle: 'h23',
        })
          .formatToParts(new Date(ms))
          .map((x) => [x.type, x.value]),
      );
      return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
    };
    const hourAgo = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
    await openPage(page, dash.url, 'generations', { fresh: true });
    const row = page.getByTestId(`generation-${id}`);
    await row.waitFor();
    // Times in the viewer's zone, with the zone (New York in November: EST).
    expect(await row.textContent()).toMatch(/\d{2}-\d{2} \d{2}:\d{2} (EST|GMT-5)/);
    const fromLabel = page.getByLabel(/^From \(/);
    expect(await page.locator('label', { has: fromLabel }).textContent()).toContain(ZONE);
    await fromLabel.fill(local(hourAgo));
    await expect.poll(() => last('/api/generations')?.get('from')).toBe(new Date(hourAgo).toISOString());
    await row.waitFor();
    await page.getByLabel(/^To \(/).fill(local(hourAgo + 60_000));
    await expect
      .poll(() => last('/api/generations')?.get('to'))
      .toBe(new Date(hourAgo + 60_000).toISOString());
    await expect.poll(() => row.count()).toBe(0);
    await shoot(page, 'bodies-generations-range-ny-1280');

    // Periods stay UTC and say so.
    await openPage(page, dash.url, 'overview', { fresh: true });
    expect(await page.getByTestId('spend-today').textContent()).toContain('(UTC)');
  });
});
