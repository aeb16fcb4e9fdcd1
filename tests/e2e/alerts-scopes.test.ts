/**
 * Issue 29's alerts, every scope, with 2 proxies and 2 billing workers in one stack: one load crosses
 * thresholds of a key's limit, its team's limit and the account's prepaid credits, and the
 * credits-below amount. The alerts are exactly the thresholds the committed spend reached (decided
 * where the spend is committed, once per threshold per period whichever worker committed it), a local
 * receiver gets exactly one delivery of each (both workers poll the outbox), and every delivery's
 * Standard Webhooks signature verifies with the library's verifier. (The receiver being down for a
 * minute is tests/faults/alerts.test.ts, with processes.)
 */
import { DEV_SERVICE_KEYS } from '@tollgate/auth';
import { type BillingHandle, loadConfig as loadBillingConfig, startBilling } from '@tollgate/billing';
import { toDecimal, toUnits } from '@tollgate/money';
import { loadConfig as loadProxyConfig, type ProxyHandle, startProxy } from '@tollgate/proxy';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEV_CATALOG_PATH, describeResponse, MODEL, type Stack, startStack } from '../support/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

const WEBHOOK_ENV = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1', WEBHOOK_POLL_MS: '100' };

let stack: Stack;
let billing2: BillingHandle;
let proxy2: ProxyHandle;
const receiver = new WebhookReceiver(204);

beforeAll(async () => {
  await receiver.start();
  stack = await startStack({ billingEnv: WEBHOOK_ENV });
  const shared = stack.infraEnv();
  // A second billing worker on the same queues and database, as a second replica is.
  billing2 = await startBilling(
    loadBillingConfig({
      ...shared,
      ...WEBHOOK_ENV,
      DATABASE_URL: stack.infra.database.url,
      BATCH_TIMEOUT_MS: '10',
      KEYS_URL: stack.services.keys.url,
      CATALOG_PATH: DEV_CATALOG_PATH,
      SERVICE_PRIVATE_KEY: DEV_SERVICE_KEYS.billing.privateKey,
      SERVICE_PUBLIC_KEYS: ['proxy', 'keys', 'dashboard', 'admin']
        .map((c) => `${c}=${DEV_SERVICE_KEYS[c as keyof typeof DEV_SERVICE_KEYS].publicKey}`)
        .join(','),
    }),
  );
  proxy2 = await startProxy(
    loadProxyConfig({
      ...shared,
      KEYS_URL: stack.services.keys.url,
      BILLING_URL: stack.services.billing.url,
      SERVICE_PRIVATE_KEY: DEV_SERVICE_KEYS.proxy.privateKey,
    }),
    { catalog: stack.catalog },
  );
}, 120_000);

afterAll(async () => {
  await proxy2?.close();
  await billing2?.close();
  await stack?.close();
  await receiver.stop();
}, 120_000);

describe('alerts of every scope across 2 proxies and 2 billing workers', () => {
  it('one signed delivery per threshold reached: key, team, account credits and credits below', async () => {
    const origins = [stack.origin, proxy2.url];
    const runtime = stack.services.keys.runtime;
    const account = await stack.createAccount({ credits: '1' });
    const team = await runtime.teams.create(account.id, { name: 'alerting team' });
    const { row, key } = await runtime.keys.create(account.id, {
      name: 'alerting',
      scope: 'inference',
      governance: { teamId: team.id },
    });
    let turn = 0;
    const chat = async () => {
      const res = await fetch(`${origins[turn++ % 2]}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          max_tokens: 24,
          messages: [{ role: 'user', content: 'alerts' }],
        }),
      });
      const text = await res.text();
      return {
        status: res.status,
        text,
        cost: res.status === 200 ? String(JSON.parse(text).usage.cost) : '0',
      };
    };

    // What one request costs (`unit`); then the limits in units: the key's limit 20 (25/50/75 %
    // at 5, 10, 15), its team's 30 (7.5, 15, 22.5), the credits corrected to 32 (8, 16, 24) and credits
    // below 18 left (after 14). The load takes the key to ≥ 17 of its 20: past a threshold of each.
    const first = await chat();
    expect(first.status, first.text).toBe(200);
    const unit = toUnits(first.cost);
    const limits = { key: unit * 20n, team: unit * 30n, credits: unit * 32n, low: unit * 18n };
    // Limits that never reset (period `all`): a daily one would start again if the run crossed 00:00 UTC.
    await runtime.keys.update(account.id, row.id, { limit: toDecimal(limits.key), limitReset: null });
    await runtime.teams.update(account.id, team.id, { limit: toDecimal(limits.team), limitReset: null });
    await stack.addCredits(account.id, toDecimal(limits.credits - toUnits('1')));
    const lowCredit = toDecimal(limits.low);
    expect(String(Number(lowCredit)), 'a JSON number that is the exact amount').toBe(lowCredit);
    const created = await stack.api('/webhooks', {
      key: account.managementKey,
      body: { url: receiver.url('/alerts'), thresholds: [25, 50, 75], low_credit: Number(lowCredit) },
    });
    expect(created.status, describeResponse(created)).toBe(201);
    const secret = created.body.data.secret as string;

    const period = 'all';
    const pool = stack.services.billing.db;
    const committed = async (table: 'key_spend' | 'team_spend', column: 'key_id' | 'team_id', id: string) => {
      const r = await pool
        .selectFrom(`billing.${table}` as 'billing.key_spend')
        .select((eb) => eb.cast<string>('amount', 'text').as('amount'))
        .where(column as 'key_id', '=', id)
        .where('period', '=', period)
        .executeTakeFirst();
      return r ? toUnits(r.amount) : 0n;
    };
    // Load through both proxies, 4 at a time, until the key's committed spend reaches 85 % or it is refused.
    for (
      let refused = false;
      !refused && (await committed('key_spend', 'key_id', row.id)) * 100n < 85n * limits.key;
    ) {
      const answers = await Promise.all([0, 1, 2, 3].map(() => chat()));
      for (const a of answers) expect([200, 403], a.text).toContain(a.status);
      refused = answers.some((a) => a.status === 403);
      await new Promise((r) => setTimeout(r, 100)); // let billing commit
    }

    const alertRows = () =>
      pool
        .selectFrom('billing.alerts')
        .select(['id', 'scope', 'threshold'])
        .where('account_id', '=', account.id)
        .execute();
    // Every delivery made (and the last commits in), then a pause in which a duplicate would arrive.
    await vi.waitFor(
      async () => {
        const pending = await pool
          .selectFrom('billing.alert_deliveries')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('account_id', '=', account.id)
          .where('status', '<>', 'delivered')
          .executeTakeFirstOrThrow();
        expect(Number(pending.n)).toBe(0);
        expect(receiver.got.length).toBe((await alertRows()).length);
      },
      { timeout: 30_000, interval: 200 },
    );
    await new Promise((r) => setTimeout(r, 1_500));

    const usage = await pool
      .selectFrom('billing.account_usage')
      .select((eb) => eb.cast<string>('amount', 'text').as('amount'))
      .where('account_id', '=', account.id)
      .executeTakeFirstOrThrow();
    const spent = {
      key: await committed('key_spend', 'key_id', row.id),
      team: await committed('team_spend', 'team_id', team.id),
      account: toUnits(usage.amount),
    };
    const reached = (scope: string, s: bigint, limit: bigint) =>
      [25n, 50n, 75n].filter((p) => s * 100n >= p * limit).map((p) => `${scope} ${p}`);
    const expected = [
      ...reached('key', spent.key, limits.key),
      ...reached('team', spent.team, limits.team),
      ...reached('account', spent.account, limits.credits),
      ...(limits.credits - spent.account < limits.low ? [`account low_credit:${lowCredit}`] : []),
    ].sort();
    // The load went past a threshold of every scope and the low-credit amount (else this proves less).
    expect(expected).toEqual(
      expect.arrayContaining(['key 75', 'team 50', 'account 50', `account low_credit:${lowCredit}`]),
    );
    const alerts = await alertRows();
    expect(alerts.map((a) => `${a.scope} ${a.threshold}`).sort()).toEqual(expected);

    const wh = new Webhook(secret);
    const scopes = new Map<string, object>([
      ['key', { type: 'spend.threshold', data: { scope: 'key', key_id: row.id, team_id: team.id } }],
      ['team', { type: 'spend.threshold', data: { scope: 'team', team_id: team.id } }],
      ['account', { data: { scope: 'account', account_id: account.id } }],
    ]);
    const got: string[] = [];
    for (const g of receiver.got) {
      const payload = wh.verify(g.body, g.headers as Record<string, string>) as {
        type: string;
        data: { scope: string; threshold_percent?: number; low_credit?: string };
      };
      expect(payload).toMatchObject(
        scopes.get(payload.data.scope) ?? { data: { scope: 'key, team or account' } },
      );
      got.push(
        payload.type === 'credits.low'
          ? `${payload.data.scope} low_credit:${payload.data.low_credit}`
          : `${payload.data.scope} ${payload.data.threshold_percent}`,
      );
    }
    expect(got.sort(), 'one delivery per alert, no duplicate').toEqual(expected);
    expect(receiver.got.map((g) => g.headers['webhook-id']).sort()).toEqual(
      alerts.map((a) => `msg_${String(a.id).replaceAll('-', '')}`).sort(),
    );
  });
});
