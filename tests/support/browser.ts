/**
 * The dashboard's browser tests' common part (Chromium through playwright-core): whether they can
 * run here, the browser they launch, signing in, opening a page, screenshots and the axe audit.
 * Outside CI a machine without Chromium or a built UI (`make install` builds it) skips them; CI never
 * skips.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { TestUser } from './dashboard';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const UI_BUILT = existsSync(resolve(root, 'services/dashboard/ui/dist/index.html'));

/** Chromium or the built UI is missing outside CI: `describe.skipIf(browserUnavailable)`. */
export const browserUnavailable = !process.env.CI && (!existsSync(CHROMIUM) || !UI_BUILT);

/** Where the browser tests put their screenshots. */
export const SHOTS = resolve(root, 'test-results/dashboard');

/** Headless Chromium (CHROMIUM_PATH, default /usr/bin/chromium), quiet: no sync, no updates. */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
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

/** A whole-page screenshot, test-results/dashboard/<name>.png. */
export async function shoot(p: Page, name: string): Promise<void> {
  await p.screenshot({ path: resolve(SHOTS, `${name}.png`), fullPage: true });
}

/** Signs in with email and password on the dashboard at `url`, and waits for the Overview. */
export async function signInPage(p: Page, url: string, user: TestUser): Promise<void> {
  await p.goto(url);
  await p.getByLabel('Email').fill(user.email);
  await p.getByLabel('Password').fill(user.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
}

/**
 * Opens a page of the dashboard at `url` (`path`: `usage`, `usage?group_by=app`…) and waits for its
 * heading. `fresh`: through about:blank, so nothing the page before cached is shown.
 */
export async function openPage(p: Page, url: string, path: string, options: { fresh?: boolean } = {}) {
  if (options.fresh) await p.goto('about:blank');
  await p.goto(`${url}/#/${path}`);
  await p.getByRole('heading', { level: 1 }).waitFor();
}

/** The serious and critical axe-core violations of the page, one line each (empty: none). */
export async function seriousAxeViolations(p: Page): Promise<string[]> {
  await p.evaluate(axe.source);
  return (await p.evaluate(async () => {
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
