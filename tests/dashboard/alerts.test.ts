/**
 * The dashboard's Alerts page API (issue 29) against the real stack: an owner adds a webhook (the
 * signing secret shown once), sends a test message that a local receiver gets signed, reads the
 * delivery log; a viewer reads but changes nothing; another account sees none of it.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardSession, startTestDashboard, type TestDashboard } from '../support/dashboard';
import { type Stack, startStack } from '../support/stack';
import { WebhookReceiver } from '../support/webhook-receiver';

let stack: Stack;
let dash: TestDashboard;
let owner: DashboardSession;
let viewer: DashboardSession;
let stranger: DashboardSession;
const receiver = new WebhookReceiver(200);
const got = receiver.got;

beforeAll(async () => {
  await receiver.start();
  stack = await startStack({ billingEnv: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1' } });
  dash = await startTestDashboard(stack);
  owner = await dash.signIn(await dash.createUser(stack.account.id, 'owner'));
  viewer = await dash.signIn(await dash.createUser(stack.account.id, 'viewer'));
  const other = await stack.createAccount();
  stranger = await dash.signIn(await dash.createUser(other.id, 'owner'));
});
afterAll(async () => {
  await receiver.stop();
  await dash?.close();
  await stack?.close();
});

describe('dashboard Alerts page API', () => {
  it('adds a webhook, sends a signed test, shows the delivery log; viewers read only; other accounts see nothing', async () => {
    const url = receiver.url('/hook');
    const created = await owner.call('POST', '/api/webhooks', { url, thresholds: [80, 50], low_credit: 2 });
    expect(created.status, created.text).toBe(201);
    const { id, secret } = created.body.data;
    expect(created.body.data).toMatchObject({ thresholds: [50, 80], low_credit: '2', enabled: true });
    expect(secret).toMatch(/^whsec_/);

    const list = await viewer.call('GET', '/api/webhooks');
    expect(list.status).toBe(200);
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([id]);
    expect(list.text).not.toContain(secret);
    expect((await viewer.call('POST', `/api/webhooks/${id}/test`)).status).toBe(403);
    expect((await viewer.call('POST', '/api/webhooks', { url })).status).toBe(403);

    const test = await owner.call('POST', `/api/webhooks/${id}/test`);
    expect(test.status, test.text).toBe(200);
    expect(test.body.data).toMatchObject({
      type: 'webhook.test',
      status_code: 200,
      delivery_status: 'delivered',
    });
    expect(got).toHaveLength(1);
    const payload = new Webhook(secret).verify(got[0]!.body, got[0]!.headers as Record<string, string>);
    expect(payload).toMatchObject({
      type: 'webhook.test',
      data: { account_id: stack.account.id, webhook_id: id },
    });

    const log = await viewer.call('GET', `/api/webhooks/${id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]).toMatchObject({ attempt: 1, status_code: 200, type: 'webhook.test' });

    // A private address is refused by billing's guard, with billing's message.
    const internal = await owner.call('POST', '/api/webhooks', {
      url: 'http://169.254.169.254/latest/meta-data',
    });
    expect(internal.status).toBe(400);
    expect(internal.body.error.message).toMatch(/^url: /);

    expect((await stranger.call('GET', '/api/webhooks')).body.data).toEqual([]);
    expect((await stranger.call('GET', `/api/webhooks/${id}/deliveries`)).status).toBe(404);
    expect((await stranger.call('PATCH', `/api/webhooks/${id}`, { enabled: false })).status).toBe(404);
    expect((await stranger.call('DELETE', `/api/webhooks/${id}`)).status).toBe(404);

    const off = await owner.call('PATCH', `/api/webhooks/${id}`, { enabled: false });
    expect(off.body.data.enabled).toBe(false);
    expect((await owner.call('DELETE', `/api/webhooks/${id}`)).status).toBe(204);
    expect((await owner.call('GET', '/api/webhooks')).body.data).toEqual([]);
  });
});
