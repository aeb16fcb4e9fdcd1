/**
 * Chromium for the dashboard's browser tests (tests/dashboard/browser-*.test.ts): where it is, a
 * headless launch, signing a user in through the page, and the axe-core audit every page passes.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { TestUser } from './dashboard';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
/** Where the tests write their screenshots. */
export const SHOTS = resolve(root, 'test-results/dashboard');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Outside CI the browser tests are skipped without a Chromium or a built UI. */
export const NO_BROWSER =
  !process.env.CI &&
  (!existsSync(CHROMIUM) || !existsSync(resolve(root, 'services/dashboard/ui/dist/index.html')));

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Signs `user` in through the sign-in page and waits for the Overview. */
export async function signInPage(page: Page, dashboardUrl: string, user: TestUser): Promise<void> {
  await page.goto(dashboardUrl);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

/** The page's serious and critical axe-core violations, one line each (rule: targets). */
export async function audit(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  return (await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is a global the script above defined
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v: { id: string; nodes: Array<{ target: string[] }> }) =>
          `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      );
  })) as string[];
}
