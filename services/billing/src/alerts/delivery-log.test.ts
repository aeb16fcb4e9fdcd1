/**
 * The end of a delivery and of its log (issue 29): a receiver that answers 500 forever gets exactly
 * WEBHOOK_MAX_ATTEMPTS attempts, then the delivery is `failed` and the delivery log the dashboard
 * reads shows every attempt with the receiver's status; later deliveries are not held up by it. The
 * log is removed past WEBHOOK_LOG_RETENTION_DAYS (finished deliveries and their attempts, old test
 * messages), never a pending delivery nor a threshold alert (the once-per-period record).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  registerTestKey,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';
import { loadConfig } from '../config';
import { pruneDeliveryLog } from './retention';

let s: TestBillingStack;
const ACTING_USER = randomUUID();
let receiver: Server;
let url: string;
/** Every request the receiver got, by the path it was sent to. */
const got: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push(req.url ?? '');
      // `/down` never recovers; `/up` takes everything.
      res.statusCode = req.url === '/down' ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  s = await startTestBilling({
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1',
    WEBHOOK_POLL_MS: '50',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_RETRY_MAX_MS: '100',
    WEBHOOK_MAX_ATTEMPTS: '3',
  });
  await s.billing.consumer?.close(); // the recorder is driven directly
});
afterAll(async () => {
  receiver?.close();
  await s?.cleanup();
});

const api = async (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${s.billing.url}${path}`, {
    method: init.method ?? 'GET',
    // The dashboard names the user acting on every call (billing's audit log of endpoint changes).
    headers: { ...(await serviceHeaders('dashboard')), 'x-tollgate-actor-user': ACTING_USER },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

/** An account with a key whose limit is 1 USD and an endpoint at `path` alerting at 50 %. */
async function accountWithEndpoint(path: '/down' | '/up') {
  const accountId = randomUUID();
  const keyId = randomUUID();
  registerTestKey({ keyId, accountId, limit: '1', limitReset: null });
  const res = await api(`/internal/accounts/${accountId}/webhooks`, {
    method: 'POST',
    body: { url: `${url}${path}`, thresholds: [50] },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  const endpointId = ((await res.json()) as { data: { id: string } }).data.id;
  return { accountId, keyId, endpointId };
}

const spend = (accountId: string, keyId: string) => {
  const at = new Date().toISOString();
  return s.billing.recorder.record([
    usageEvent({ account_id: accountId, key_id: keyId, cost: '0.6', finished_at: at, started_at: at }),
  ]);
};

interface LogRow {
  attempt: number;
  status_code: number | null;
  error: string | null;
  delivery_status: string;
  type: string;
}
const deliveryLog = async (accountId: string, endpointId: string) => {
  const res = await api(`/internal/accounts/${accountId}/webhooks/${endpointId}/deliveries`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: LogRow[] }).data;
};

describe('a delivery past its retry budget', () => {
  it('ends failed after WEBHOOK_MAX_ATTEMPTS attempts of a receiver answering 500, and the delivery log shows each', async () => {
    const down = await accountWithEndpoint('/down');
    await spend(down.accountId, down.keyId);
    await vi.waitFor(
      async () =>
        expect((await deliveryLog(down.accountId, down.endpointId))[0]?.delivery_status).toBe('failed'),
      { timeout: 15_000, interval: 50 },
    );
    const log = await deliveryLog(down.accountId, down.endpointId);
    expect(log.map((a) => [a.attempt, a.status_code, a.delivery_status, a.type])).toEqual([
      [3, 500, 'failed', 'spend.threshold'],
      [2, 500, 'failed', 'spend.threshold'],
      [1, 500, 'failed', 'spend.threshold'],
    ]);
    const [delivery] = await s.billing.db
      .selectFrom('billing.alert_deliveries')
      .select(['status', 'attempts', 'delivered_at'])
      .where('endpoint_id', '=', down.endpointId)
      .execute();
    expect(delivery).toEqual({ status: 'failed', attempts: 3, delivered_at: null });

    // The worker goes on: a later alert to a receiver that answers is delivered, and the failed one
    // was not tried again meanwhile.
    const up = await accountWithEndpoint('/up');
    await spend(up.accountId, up.keyId);
    await vi.waitFor(
      async () =>
        expect((await deliveryLog(up.accountId, up.endpointId))[0]?.delivery_status).toBe('delivered'),
      { timeout: 15_000, interval: 50 },
    );
    expect(got.filter((p) => p === '/down')).toHaveLength(3);
  });
});

describe('WEBHOOK_LOG_RETENTION_DAYS', () => {
  it('defaults to 90 days and refuses 0', () => {
    expect(loadConfig({}).WEBHOOK_LOG_RETENTION_DAYS).toBe(90);
    expect(() => loadConfig({ WEBHOOK_LOG_RETENTION_DAYS: '0' })).toThrow(/WEBHOOK_LOG_RETENTION_DAYS/);
  });

  it('removes finished deliveries, their attempts and old test messages; keeps pending ones and threshold alerts', async () => {
    const old = await accountWithEndpoint('/up');
    await spend(old.accountId, old.keyId);
    await vi.waitFor(
      async () =>
        expect((await deliveryLog(old.accountId, old.endpointId))[0]?.delivery_status).toBe('delivered'),
      { timeout: 15_000, interval: 50 },
    );
    const test = await api(`/internal/accounts/${old.accountId}/webhooks/${old.endpointId}/test`, {
      method: 'POST',
    });
    expect(test.status).toBe(200);
    // A pending delivery of another account, as old (to an endpoint since disabled: never tried).
    const waiting = await accountWithEndpoint('/down');
    await sql`update billing.webhook_endpoints set enabled = false where id = ${waiting.endpointId}`.execute(
      s.billing.db,
    );
    await sql`
      with a as (
        insert into billing.alerts (account_id, scope, scope_id, period, threshold, payload)
        values (${waiting.accountId}, 'key', ${waiting.keyId}, 'all', '50', '{}') returning id)
      insert into billing.alert_deliveries (alert_id, endpoint_id, account_id)
      select a.id, ${waiting.endpointId}, ${waiting.accountId} from a`.execute(s.billing.db);
    const accounts = [old.accountId, waiting.accountId];
    const longAgo = new Date(Date.now() - 100 * 86_400_000);
    await sql`update billing.alert_deliveries set created_at = ${longAgo} where account_id = any(${accounts}::uuid[])`.execute(
      s.billing.db,
    );
    await sql`update billing.alerts set created_at = ${longAgo} where account_id = any(${accounts}::uuid[])`.execute(
      s.billing.db,
    );
    const count = async (
      table: 'alerts' | 'alert_deliveries' | 'alert_delivery_attempts',
      accountId: string,
    ) =>
      Number(
        (
          await sql<{
            n: string;
          }>`select count(*)::text as n from ${sql.table(`billing.${table}`)} where account_id = ${accountId}`.execute(
            s.billing.db,
          )
        ).rows[0]?.n,
      );
    expect(await count('alert_deliveries', old.accountId)).toBe(2); // the threshold's and the test's
    expect(await count('alert_delivery_attempts', old.accountId)).toBe(2);

    const pruned = await pruneDeliveryLog(s.billing.db, new Date(Date.now() - 90 * 86_400_000));
    expect(pruned).toEqual({ deliveries: 2, tests: 1 });
    expect(await count('alert_deliveries', old.accountId)).toBe(0);
    expect(await count('alert_delivery_attempts', old.accountId)).toBe(0);
    expect(await deliveryLog(old.accountId, old.endpointId)).toEqual([]);
    const kept = await s.billing.db
      .selectFrom('billing.alerts')
      .select(['account_id', 'scope'])
      .where('account_id', 'in', accounts)
      .orderBy('account_id')
      .execute();
    expect(kept.map((a) => a.scope)).toEqual(['key', 'key']); // the threshold alerts of both accounts
    expect(await count('alert_deliveries', waiting.accountId)).toBe(1); // still pending: kept
    // Entries younger than the cutoff are never touched.
    expect(await pruneDeliveryLog(s.billing.db, new Date(Date.now() - 101 * 86_400_000))).toEqual({
      deliveries: 0,
      tests: 0,
    });
  });
});
