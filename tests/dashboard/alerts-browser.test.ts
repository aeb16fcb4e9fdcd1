/**
 * The dashboard's Alerts page in a real browser (Debian's Chromium through playwright-core) against
 * the real stack: an owner adds a webhook through the form, copies the signing secret shown once,
 * presses "Send test", and the delivery log shows the receiver's answer; the receiver verifies the
 * Standard Webhooks signature with that secret. A viewer sees the page without the buttons that change.
 */
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserUnavailable, launchChromium, openPage, signInPage } from '../support/browser';
import { startTestDashboard, type TestDashboard, type TestUser } from '../support/dashboard';
import { type Stack, startStack } from '../support/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

let stack: Stack;
let dash: TestDashboard;
let browser: Browser;
const receiver = new WebhookReceiver(202);
const got = receiver.got;

/** Signs in and opens the Alerts page. */
async function signIn(p: Page, user: TestUser) {
  await signInPage(p, dash.url, user);
  await openPage(p, dash.url, 'alerts');
  await p.getByRole('heading', { level: 1, name: 'Alerts' }).waitFor();
}

describe.skipIf(browserUnavailable)('the Alerts page in Chromium', () => {
  beforeAll(async () => {
    await receiver.start();
    stack = await startStack({ billingEnv: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' } });
    dash = await startTestDashboard(stack);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await receiver.stop();
    await browser?.close();
    await dash?.close();
    await stack?.close();
  });

  it('an owner adds a webhook, sees its secret once, sends a signed test and reads the delivery log; a viewer only reads', async () => {
    const owner = await dash.createUser(stack.account.id, 'owner');
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await signIn(page, owner);
    const url = receiver.url('/alerts');
    const form = page.getByRole('form', { name: 'Add a webhook' });
    await form.getByLabel('URL').fill(url);
    await form.getByLabel(/Thresholds/).fill('25, 75');
    await form.getByLabel(/Low-credit/).fill('3');
    await form.getByRole('button', { name: 'Add' }).click();
    const shown = page.getByTestId('webhook-secret');
    await shown.waitFor();
    const secret = (await shown.textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => shown.count()).toBe(0); // shown once: gone from the page
    const row = page.getByRole('row', { name: new RegExp(url) });
    await row.waitFor();
    expect(await row.textContent()).toContain('25 %, 75 %');

    await row.getByRole('button', { name: 'Send test' }).click();
    const log = page.getByRole('table', { name: `Delivery log of ${url}` });
    await log.getByRole('cell', { name: '202', exact: true }).waitFor();
    expect(await log.textContent()).toContain('webhook.test');
    expect(got).toHaveLength(1);
    expect(new Webhook(secret).verify(got[0]!.body, got[0]!.headers as Record<string, string>)).toMatchObject(
      {
        type: 'webhook.test',
      },
    );
    expect(await page.content()).not.toContain(secret);

    const viewer = await dash.createUser(stack.account.id, 'viewer');
    const vpage = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await signIn(vpage, viewer);
    const vrow = vpage.getByRole('row', { name: new RegExp(url) });
    await vrow.waitFor();
    expect(await vrow.getByRole('button', { name: 'Send test' }).count()).toBe(0);
    expect(await vpage.getByRole('form', { name: 'Add a webhook' }).count()).toBe(0);
    await vrow.getByRole('button', { name: 'Delivery log' }).click();
    await vpage
      .getByRole('table', { name: `Delivery log of ${url}` })
      .getByRole('cell', { name: '202', exact: true })
      .waitFor();
  }, 120_000);
});
