/// <reference lib="dom" />
/**
 * Issue 28, the Audit page's layout in Chromium against the real stack: at 1280 and 1920 px every
 * column's header lies inside the screen and the table needs no sideways scrolling (at 1280 its last
 * columns were cut off: the whole before and after records, one column each, made it ~1,500 px wide);
 * at 390 px each entry is a card whose every line lies inside the screen and is labelled with its
 * column's header. The entries come from real changes: keys created and edited through the
 * dashboard, a team, the account's settings. Screenshots: test-results/dashboard/audit-*.png.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrowserStack,
  browserUnavailable,
  openPage,
  seriousAxeViolations,
  shoot,
  startBrowserStack,
} from '../support/browser';

let b: BrowserStack;
let page: Page;

const HEADERS = ['Time', 'Action', 'Who', 'Target', 'Change', 'Log'];

/** The boxes of the table's header cells (1280, 1920) or of the first card's cells (390). */
function boxes(p: Page, selector: string) {
  return p.evaluate(
    (sel) =>
      [...document.querySelectorAll(sel)].map((e) => {
        const r = e.getBoundingClientRect();
        return {
          text: (e as HTMLElement).innerText.trim(),
          label: e.getAttribute('data-label'),
          left: r.left,
          right: r.right,
          width: r.width,
        };
      }),
    selector,
  );
}

describe.skipIf(browserUnavailable)('the Audit page in Chromium', () => {
  beforeAll(async () => {
    b = await startBrowserStack();
    page = b.page;
    const api = b.ownerApi;
    // Changes whose records are long: every governance field set, then changed.
    const key = await api.call('POST', '/api/keys', {
      name: 'audited key with a rather long name',
      limit: 12.5,
      limit_reset: 'monthly',
      allowed_models: ['openai/gpt-4o-mini', 'anthropic/*', 'google/gemini-2.5-flash'],
      rate_limit_rpm: 120,
      rate_limit_tpm: 90_000,
    });
    expect(key.status, key.text).toBe(201);
    const edit = await api.call('PATCH', `/api/keys/${key.body.data.hash}`, {
      limit: 20,
      allowed_models: ['openai/*'],
      store_bodies: true,
    });
    expect(edit.status, edit.text).toBe(200);
    const team = await b.stack.api('/teams', {
      key: b.stack.account.managementKey,
      body: { name: 'platform', limit: 5, limit_reset: 'weekly' },
    });
    expect(team.status, team.text).toBe(201);
    expect((await api.call('PATCH', '/api/account', { store_bodies: true })).status).toBe(200);
  }, 180_000);
  afterAll(() => b?.close(), 120_000);

  it('shows every column’s header inside the screen at 1280 and 1920 px, with no sideways scrolling', async () => {
    for (const width of [1280, 1920]) {
      await page.setViewportSize({ width, height: 900 });
      await openPage(page, b.dash.url, 'audit', { fresh: true });
      const table = page.getByRole('table', { name: 'Audit log' });
      await table.getByText('account.update').waitFor();
      const headers = await boxes(page, 'table[aria-label="Audit log"] thead th');
      expect(headers.map((h) => h.text.toLowerCase())).toEqual(HEADERS.map((h) => h.toLowerCase()));
      for (const h of headers) {
        expect(h.left, `${h.text} at ${width}`).toBeGreaterThanOrEqual(0);
        expect(h.right, `${h.text} at ${width}`).toBeLessThanOrEqual(width);
        expect(h.width, `${h.text} at ${width}`).toBeGreaterThan(20);
      }
      const overflow = await page.evaluate(() => {
        const f = document.querySelector('.audit-table .table-frame') as HTMLElement;
        return f.scrollWidth - f.clientWidth;
      });
      expect(overflow, `the table scrolls sideways at ${width} px`).toBeLessThanOrEqual(1);
      // An update lists what changed, field by field.
      expect(await table.getByText('limit: "12.5" → "20"').count()).toBe(1);
      expect(await table.getByText('store_bodies: false → true').count()).toBe(2);
      await shoot(page, `audit-${width}`);
      expect(await seriousAxeViolations(page)).toEqual([]);
    }
  });

  it('shows each entry as a card at 390 px, every line inside the screen and labelled', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await openPage(page, b.dash.url, 'audit', { fresh: true });
    await page.getByRole('table', { name: 'Audit log' }).getByText('account.update').waitFor();
    const rows = await page.locator('table[aria-label="Audit log"] tbody tr').count();
    expect(rows).toBeGreaterThan(4);
    for (let i = 1; i <= rows; i++) {
      const cells = await boxes(page, `table[aria-label="Audit log"] tbody tr:nth-child(${i}) td`);
      expect(cells.map((c) => c.label)).toEqual(HEADERS);
      for (const c of cells) {
        expect(c.left, `row ${i} ${c.label}`).toBeGreaterThanOrEqual(0);
        expect(c.right, `row ${i} ${c.label}`).toBeLessThanOrEqual(390);
      }
    }
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    ).toBeLessThanOrEqual(1);
    await shoot(page, 'audit-390');
    expect(await seriousAxeViolations(page)).toEqual([]);
  });
});
