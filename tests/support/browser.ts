/**
 * The dashboard's browser tests' common part (Chromium through playwright-core): whether they can
 * run here, the whole stack with a dashboard, an owner and a signed-in page (`startBrowserStack`),
 * the browser they launch, signing in, opening a page, screenshots and the axe audit.
 * Outside CI a machine without Chromium or a built UI (`make install` builds it) skips them; CI never
 * skips.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import axe from 'axe-core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { type DashboardSession, startTestDashboard, type TestDashboard, type TestUser } from './dashboard';
import { type Stack, startStack } from './stack';

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

/** What `startBrowserStack` started: close it in `afterAll` (browser, dashboard, stack, in that order). */
export interface BrowserStack {
  stack: Stack;
  dash: TestDashboard;
  /** An owner of the stack's account, signed in on `page` and through `ownerApi`. */
  owner: TestUser;
  ownerApi: DashboardSession;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Every browser test's start: the real stack (`startStack`), a dashboard on it, an owner of its
 * account (signed in through the API and on a page), Chromium with one context (1280 × 900 unless
 * `viewport`; `timezoneId` for the viewer's zone).
 */
export async function startBrowserStack(
  options: {
    stack?: Parameters<typeof startStack>[0];
    dashboard?: Parameters<typeof startTestDashboard>[1];
    viewport?: { width: number; height: number };
    timezoneId?: string;
  } = {},
): Promise<BrowserStack> {
  const stack = await startStack(options.stack);
  let dash: TestDashboard | undefined;
  let browser: Browser | undefined;
  try {
    dash = await startTestDashboard(stack, options.dashboard);
    const owner = await dash.createUser(stack.account.id, 'owner');
    const ownerApi = await dash.signIn(owner);
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 900 },
      ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}),
    });
    const page = await context.newPage();
    await signInPage(page, dash.url, owner);
    const started = { dash, browser };
    return {
      stack,
      dash,
      owner,
      ownerApi,
      browser,
      context,
      page,
      async close() {
        await started.browser.close();
        await started.dash.close();
        await stack.close();
      },
    };
  } catch (err) {
    await browser?.close();
    await dash?.close();
    await stack.close();
    throw err;
  }
}
