/**
 * Issue 29's done-when for alerts: a local webhook receiver records exactly one delivery per threshold
 * crossing with 2 proxies and 2 billing workers running, survives being down for a minute (delivered
 * after), and every delivery's Standard Webhooks signature verifies with the library's verifier.
 */
import { randomUUID } from 'node:crypto';
import { devServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { toDecimal, toUnits } from '@tollgate/money';
import { freePort } from '@tollgate/testkit';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { WebhookReceiver } from '../support/webhook-receiver';
import { FaultStack, MODEL, type ServiceProcess, sleep } from './harness';

/** One non-streamed completion through `proxy`; the status and, for a 200, the cost it carried. */
async function chat(proxy: ServiceProcess, key: string): Promise<{ status: number; cost?: string }> {
  const res = await fetch(`${proxy.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, max_tokens: 24, messages: [{ role: 'user', content: 'alerts' }] }),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status };
  return { status: 200, cost: String((JSON.parse(text) as { usage: { cost: number | string } }).usage.cost) };
}

const DOWN_MS = 60_000;
let stack: FaultStack | undefined;
const receiver = new WebhookReceiver(204);
afterAll(async () => {
  await receiver.stop();
  await stack?.close();
});

describe('spend alerts across replicas (issue 29)', () => {
  it('delivers exactly one signed webhook per threshold crossing with 2 proxies and 2 billing workers, after a minute of receiver downtime', async () => {
    stack = new FaultStack({
      billingEnv: {
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1',
        WEBHOOK_POLL_MS: '250',
        WEBHOOK_TIMEOUT_MS: '3000',
        WEBHOOK_RETRY_BASE_MS: '2000',
        // The cap the issue asks to be configurable: at most 8 s between attempts, so delivery
        // follows the receiver's return within seconds (the default, 1 h, suits production).
        WEBHOOK_RETRY_MAX_MS: '8000',
      },
    });
    await stack.start();
    await stack.startBilling(); // a second billing worker on the same queue and database
    const proxies = [stack.proxy, await stack.startExtraProxy()];
    await receiver.start(await freePort());

    const runtime = await stack.admin();
    const account = await runtime.accounts.create({ slug: `alerts-${Date.now()}`, name: 'alerts' });
    const { row, key } = await runtime.keys.create(account.id, { name: 'alerting', scope: 'inference' });

    // The endpoint, as the dashboard creates it (billing's internal route, the dashboard's identity).
    const billingUrl = stack.billing[0]?.url as string;
    const created = await fetch(`${billingUrl}/internal/accounts/${account.id}/webhooks`, {
      method: 'POST',
      headers: {
        [SERVICE_TOKEN_HEADER]: await devServiceSigner('dashboard').sign('billing'),
        'content-type': 'application/json',
        // The owner acting, as the dashboard names them (billing audits endpoint changes).
        'x-tollgate-actor-user': randomUUID(),
      },
      body: JSON.stringify({ url: receiver.url('/tollgate-alerts'), thresholds: [25, 50, 75] }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { secret } = ((await created.json()) as { data: { secret: string } }).data;

    // Credits first (the account is prepaid), then a request to learn what one costs; the key's limit
    // is 20 of them, so the key's spend passes 25 %, 50 % and 75 % under the load below. A limit that
    // never resets (period `all`): a daily one starts again at 00:00 UTC, which a run of minutes crosses
    // about 1 time in 400 (the spend read below would start from zero and the thresholds alert again).
    await stack.addCredits(account.id, '1');
    const first = await chat(proxies[0] as ServiceProcess, key);
    expect(first.status).toBe(200);
    const unit = toUnits(first.cost as string);
    await runtime.keys.update(account.id, row.id, { limit: toDecimal(unit * 20n), limitReset: null });
    const period = 'all';
    const keySpend = async () => {
      const { rows } = await stack!.pool.query<{ amount: string }>(
        'select amount::text as amount from billing.key_spend where key_id = $1 and period = $2',
        [row.id, period],
      );
      return rows[0] ? toUnits(rows[0].amount) : 0n;
    };
    /** Load through both proxies until the committed spend of the key reaches `pct` % (or it is refused). */
    const loadTo = async (pct: bigint) => {
      let refused = false;
      let turn = 0;
      while (!refused && (await keySpend()) * 100n < pct * unit * 20n) {
        const answers = await Promise.all(
          [0, 1, 2, 3].map(() => chat(proxies[turn++ % 2] as ServiceProcess, key)),
        );
        refused = answers.some((a) => a.status === 403);
        expect(
          answers.every((a) => a.status === 200 || a.status === 403),
          JSON.stringify(answers),
        ).toBe(true);
        await sleep(100); // let billing commit (the spend read above is the committed one)
      }
    };

    // Receiver up: 25 % is crossed and delivered.
    await loadTo(30n);
    await vi.waitFor(() => expect(receiver.got.length).toBe(1), { timeout: 20_000, interval: 200 });

    // Receiver down for a minute while 50 % and 75 % are crossed: attempts fail and are retried.
    await receiver.stop();
    const downAt = Date.now();
    await loadTo(80n);
    const failedAttempts = async () =>
      Number(
        (
          await stack!.pool.query<{ n: string }>(
            'select count(*)::text as n from billing.alert_delivery_attempts where account_id = $1 and status_code is null',
            [account.id],
          )
        ).rows[0]?.n,
      );
    // A timer can fire a millisecond early by Date.now()'s clock: sleep a little past the minute.
    await sleep(Math.max(0, DOWN_MS - (Date.now() - downAt)) + 20);
    expect(Date.now() - downAt).toBeGreaterThanOrEqual(DOWN_MS);
    const failed = await failedAttempts();
    expect(failed, 'attempts while the receiver was down').toBeGreaterThanOrEqual(4); // ≥ 2 deliveries × ≥ 2 tries
    expect(receiver.got.length).toBe(1);

    // Back up: everything pending arrives once.
    const upAt = Date.now();
    await receiver.start();
    const { rows: alerts } = await stack.pool.query<{ id: string; scope: string; threshold: string }>(
      'select id::text, scope, threshold from billing.alerts where account_id = $1 order by scope, threshold',
      [account.id],
    );
    await vi.waitFor(
      async () => {
        const { rows } = await stack!.pool.query<{ n: string }>(
          "select count(*)::text as n from billing.alert_deliveries where account_id = $1 and status <> 'delivered'",
          [account.id],
        );
        expect(rows[0]?.n).toBe('0');
      },
      { timeout: 30_000, interval: 250 },
    );
    await sleep(2_000); // a duplicate would arrive now, if any
    const lastAt = Math.max(...receiver.got.map((g) => g.at));
    console.info(
      `alerts: ${alerts.length} alerts, receiver down ${upAt - downAt} ms, ${failed} failed attempts meanwhile, all delivered ${lastAt - upAt} ms after it returned`,
    );

    // Every threshold of the key once: 25, 50, 75 (the account's 1 USD of credits is far from 25 %).
    expect(
      alerts
        .filter((a) => a.scope === 'key')
        .map((a) => a.threshold)
        .sort(),
    ).toEqual(['25', '50', '75']);
    const wh = new Webhook(secret);
    const ids = new Set<string>();
    for (const g of receiver.got) {
      const payload = wh.verify(g.body, g.headers as Record<string, string>) as {
        type: string;
        data: { key_id: string };
      };
      expect(payload).toMatchObject({ type: 'spend.threshold', data: { key_id: row.id } });
      ids.add(g.headers['webhook-id'] as string);
    }
    expect(receiver.got.length, 'one delivery per alert, no duplicate').toBe(alerts.length);
    expect([...ids].sort()).toEqual(alerts.map((a) => `msg_${a.id.replaceAll('-', '')}`).sort());
    expect(receiver.got.filter((g) => g.at >= upAt).length).toBe(alerts.length - 1); // the rest came after the downtime
  }, 900_000); // a minute of receiver downtime plus retries, 6 processes to start: ~220 s at load average 20, over 420 s at 45
});
