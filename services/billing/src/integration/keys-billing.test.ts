import { startTestKeysService, type TestKeysService } from '@tollgate/keys/testing';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// The admin CLI is not a package export of @tollgate/keys; its entry module is imported by path.
import { runCli } from '../../../keys/src/cli/command';
import { commandGroups } from '../../../keys/src/cli/main';
import {
  keyHeaders,
  signedHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';

// keys + billing together: the keys service's usage reader against /internal/usage/keys, and the
// admin CLI's credits / postpaid commands against billing's internal API.
let billing: TestBillingStack;
let keys: TestKeysService;

beforeAll(async () => {
  billing = await startTestBilling();
  keys = await startTestKeysService({
    env: { BILLING_URL: billing.billing.url },
  });
});
afterAll(async () => {
  await keys?.close();
  await billing?.cleanup();
});

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, commandGroups, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: {
      DATABASE_URL: keys.config.DATABASE_URL,
      REDIS_URL: keys.config.REDIS_URL,
      REDIS_PREFIX: keys.config.REDIS_PREFIX,
      BILLING_URL: billing.billing.url,
      ...env,
    },
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) as { data: Record<string, unknown> } };
}

describe('keys service with a real billing', () => {
  it('shows spend recorded by billing on key objects (usage in the limit period, daily/weekly/monthly)', async () => {
    const key = await keys.createKey(keys.account.id, { name: 'spender', limit: '5', limitReset: 'daily' });
    const e = usageEvent({ key_id: key.id, account_id: keys.account.id, cost: '0.75' });
    await billing.publish(e);
    await vi.waitFor(
      async () => {
        const res = await fetch(`${keys.url}/keys/${key.id}`, {
          headers: await keys.callerHeaders(keys.account.managementKey),
        });
        const body = (await res.json()) as { data: { usage: number; limit_remaining: number } };
        expect(body.data.usage, JSON.stringify(body)).toBe(0.75);
        expect(body.data.limit_remaining).toBe(4.25);
      },
      { timeout: 5000 },
    );
    const own = await fetch(`${keys.url}/key`, { headers: await keys.callerHeaders(key) });
    const body = (await own.json()) as { data: Record<string, unknown> };
    expect(body.data).toMatchObject({
      usage: 0.75,
      usage_daily: 0.75,
      usage_weekly: 0.75,
      usage_monthly: 0.75,
    });
  });
});

describe('admin CLI credits commands', () => {
  it('adds credits to an account by slug and prints the new total (--json and text)', async () => {
    const acct = await keys.createAccount();
    const first = await cli([
      'credits',
      'add',
      '--account',
      acct.slug,
      '--amount',
      '25',
      '--note',
      'welcome',
      '--json',
    ]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toEqual({
      data: { account: acct.slug, account_id: acct.id, added: '25', total_credits: '25' },
    });
    const second = await cli(['credits', 'add', '--account', acct.slug, '--amount', '10.50']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('total credits 35.5 USD');
    const res = await fetch(`${billing.billing.url}/credits`, {
      headers: await keyHeaders({ keyId: acct.managementKey.id, accountId: acct.id, scope: 'management' }),
    });
    expect(await res.json()).toEqual({ data: { total_credits: 35.5, total_usage: 0 } });
  });

  it('switches an account to postpaid and back', async () => {
    const acct = await keys.createAccount();
    const on = await cli(['accounts', 'set-postpaid', '--account', acct.slug, '--json']);
    expect(on.code, on.stderr).toBe(0);
    expect(on.json().data).toEqual({ account: acct.slug, account_id: acct.id, postpaid: true });
    const off = await cli(['accounts', 'set-postpaid', '--account', acct.slug, '--off']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('prepaid');
  });

  it('exits 2 for an unknown account or a malformed amount, and names BILLING_URL when billing does not answer', async () => {
    const unknown = await cli(['credits', 'add', '--account', 'no-such-account', '--amount', '1', '--json']);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error.metadata.error_type).toBe('not_found');
    expect((await cli(['credits', 'add', '--account', keys.account.slug, '--amount', 'lots'])).code).toBe(2);
    // Unset, BILLING_URL defaults to the `make dev` address; an address nobody answers on is a clear error.
    const down = await cli(['credits', 'add', '--account', keys.account.slug, '--amount', '1'], {
      BILLING_URL: 'http://127.0.0.1:1',
    });
    expect(down.code).not.toBe(0);
    expect(down.stdout + down.stderr).toContain('BILLING_URL');
  });

  it('dlq show lists dead-lettered events; dlq replay records the valid ones exactly once and leaves invalid ones', async () => {
    const e = usageEvent({ cost: '0.3' });
    // Dead-lettered copies as the broker leaves them (the same event twice: a replayed replay) and a body
    // that can never be recorded.
    const conn = await amqp.connect(billing.config.AMQP_URL);
    try {
      const ch = await conn.createConfirmChannel();
      // Signed as the proxy signed them when it published (billing refuses unsigned messages).
      for (const body of [JSON.stringify(e), '{not json', JSON.stringify(e)])
        ch.sendToQueue(billing.topology.deadLetterQueue, Buffer.from(body), {
          persistent: true,
          headers: signedHeaders(Buffer.from(body)),
        });
      await ch.waitForConfirms();
    } finally {
      await conn.close();
    }

    const shown = await cli(['dlq', 'show', '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    const report = shown.json().data as {
      count: number;
      messages: Array<{ id: string | null; reason: string }>;
    };
    expect(report.count).toBe(3);
    expect(report.messages.map((m) => m.id)).toEqual([e.id, null, e.id]);
    expect(report.messages[1]!.reason).toBe('body is not JSON');
    expect((await cli(['dlq', 'show'])).stdout).toContain(e.id); // the table form, still nothing removed

    const replay = await cli(['dlq', 'replay', '--json']);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.json().data).toMatchObject({ replayed: 2, invalid: 1 });
    // The invalid body is back in the queue (the broker requeues it asynchronously).
    await vi.waitFor(async () => expect((await cli(['dlq', 'show', '--json'])).json().data.count).toBe(1), {
      timeout: 5000,
    });
    await vi.waitFor(
      async () => {
        const rows = await billing.billing.db
          .selectFrom('billing.generations')
          .select('total_cost')
          .where('id', '=', e.id)
          .execute();
        expect(rows.map((r) => Number(r.total_cost))).toEqual([0.3]);
      },
      { timeout: 5000 },
    );
    const spend = await billing.billing.db
      .selectFrom('billing.key_spend')
      .select('amount')
      .where('key_id', '=', e.key_id)
      .where('period', '=', 'all')
      .executeTakeFirstOrThrow();
    expect(Number(spend.amount)).toBe(0.3);
    expect((await cli(['dlq', 'replay', '--limit', 'x'])).code).toBe(2);
  });
});
