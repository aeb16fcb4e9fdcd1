/**
 * Issue 23, "One credential per service, for every server": each service's own login on the real
 * Postgres, Redis and RabbitMQ, made by the project's provisioning (infra/credentials) with names
 * unique to this run (the servers are shared with other test runs) and dropped afterwards. The
 * servers' default users are never changed.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { DEV_SERVICE_KEYS, parsePrivateKey } from '@tollgate/auth';
import { createMessageSigner, createUsagePublisher, inspectDeadLetters } from '@tollgate/events';
import { createLogger } from '@tollgate/logger';
import { createTestDatabase, runId, type TestDatabase } from '@tollgate/testkit';
import amqp from 'amqplib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  dropPostgresRoles,
  dropRabbitmqUsers,
  type Login,
  provisionPostgres,
  provisionRabbitmq,
  withLogin,
} from '../infra/credentials/provision';
import { createBillingDb, migrateBillingDb } from '../services/billing/src/database';
import { startTestBilling, type TestBillingStack, usageEvent } from '../services/billing/test/testing';

const tag = `${runId()}_${randomBytes(3).toString('hex')}`.replace(/[^a-z0-9_]/gi, '_').toLowerCase();
const login = (service: string): Login => ({
  user: `tgt_${tag}_${service}`,
  password: randomBytes(18).toString('base64url'),
});

describe('Postgres: a role per service, its own schema only', () => {
  let db: TestDatabase;
  const roles = { keys: login('keys'), billing: login('billing'), dashboard: login('dashboard') };

  beforeAll(async () => {
    db = await createTestDatabase();
    await provisionPostgres(db.url, roles);
    // Billing's migrations run as billing's own role: it owns and creates its schema's tables.
    const billing = createBillingDb(withLogin(db.url, roles.billing), { max: 1 });
    try {
      await migrateBillingDb(billing);
      await billing.insertInto('billing.credit_ledger').values(ledgerRow()).execute();
    } finally {
      await billing.destroy();
    }
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
    const server = new URL(db.url);
    server.pathname = '/postgres';
    await dropPostgresRoles(
      server.toString(),
      Object.values(roles).map((r) => r.user),
    );
  });

  const ledgerRow = () => ({
    id: randomUUID(),
    account_id: randomUUID(),
    amount: '1000',
    note: 'grant',
  });
  async function as(role: Login, text: string, values: unknown[] = []) {
    const client = new pg.Client({ connectionString: withLogin(db.url, role) });
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  }

  it("refuses the dashboard's role writing (or reading) billing's tables: permission denied", async () => {
    const row = ledgerRow();
    await expect(
      as(
        roles.dashboard,
        'insert into billing.credit_ledger (id, account_id, amount, note) values ($1, $2, $3, $4)',
        [row.id, row.account_id, row.amount, row.note],
      ),
    ).rejects.toThrow(/permission denied for schema billing/);
    await expect(as(roles.dashboard, 'select * from billing.credit_ledger')).rejects.toThrow(
      /permission denied for schema billing/,
    );
    await expect(as(roles.keys, 'update billing.credit_ledger set amount = 999999')).rejects.toThrow(
      /permission denied for schema billing/,
    );
  });

  it('lets billing’s role use its own tables, and no role create schemas or public tables', async () => {
    expect((await as(roles.billing, 'select count(*)::int as n from billing.credit_ledger')).rows[0].n).toBe(
      1,
    );
    await expect(as(roles.dashboard, 'create schema billing2')).rejects.toThrow(/permission denied/);
    await expect(as(roles.dashboard, 'create table public.stolen (x int)')).rejects.toThrow(
      /permission denied/,
    );
  });
});

// Redis: tests/credentials-redis.test.ts (runs on a single node and on the local Redis Cluster).

const haveRabbitmqctl = (() => {
  try {
    execFileSync(process.env.RABBITMQCTL ?? 'rabbitmqctl', ['list_users', '--quiet'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!haveRabbitmqctl)('RabbitMQ: a user per service with its permissions', () => {
  const prefix = `tgt.${tag}`;
  const users = { proxy: login('proxy'), billing: login('billing') };
  const adminUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
  let billing: TestBillingStack;

  beforeAll(async () => {
    provisionRabbitmq(prefix, users);
    // Billing runs with its own broker user (it declares its queues and consumes them).
    billing = await startTestBilling({ AMQP_URL: withLogin(adminUrl, users.billing), AMQP_PREFIX: prefix });
  }, 60_000);
  afterAll(async () => {
    await billing?.cleanup();
    dropRabbitmqUsers(Object.values(users).map((u) => u.user));
  });

  async function proxyChannel() {
    const conn = await amqp.connect(withLogin(adminUrl, users.proxy));
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => {});
    conn.on('error', () => {});
    return { conn, ch };
  }

  it("dead-letters a forged event published with the proxy's broker user, with its reason", async () => {
    const { conn, ch } = await proxyChannel();
    const forged = usageEvent({ account_id: randomUUID(), cost: '999999' });
    try {
      ch.publish(
        billing.topology.exchange,
        billing.topology.routingKey,
        Buffer.from(JSON.stringify(forged)),
        {
          persistent: true,
        },
      );
      await ch.waitForConfirms();
    } finally {
      await conn.close();
    }
    await vi.waitFor(
      async () => {
        const report = await inspectDeadLetters(adminUrl, billing.topology, 10);
        expect(report.messages.find((m) => m.id === forged.id)).toMatchObject({
          death: 'refused',
          reason: 'signature: the message is not signed',
        });
      },
      { timeout: 10_000 },
    );
    const rows = await billing.billing.db
      .selectFrom('billing.generations')
      .select('id')
      .where('id', '=', forged.id)
      .execute();
    expect(rows).toEqual([]);
  });

  it("lets the proxy's real publisher work with its user: it declares only the usage exchange, billing records", async () => {
    const publisher = createUsagePublisher({
      url: withLogin(adminUrl, users.proxy),
      topology: billing.topology,
      logger: createLogger({ name: 'proxy', level: 'silent' }),
      signer: createMessageSigner('proxy', parsePrivateKey(DEV_SERVICE_KEYS.proxy.privateKey)),
    });
    const e = usageEvent();
    try {
      publisher.publish(e);
      expect(await publisher.flush(10_000)).toBe(true);
    } finally {
      await publisher.close();
    }
    await vi.waitFor(
      async () =>
        expect(
          await billing.billing.db
            .selectFrom('billing.generations')
            .select('id')
            .where('id', '=', e.id)
            .execute(),
        ).toHaveLength(1),
      { timeout: 10_000 },
    );
  });

  it('permits the partition queues (USAGE_PARTITIONS=2): billing declares and consumes them with its user, the proxy publishes to them', async () => {
    const partitioned = await startTestBilling({
      AMQP_URL: withLogin(adminUrl, users.billing),
      AMQP_PREFIX: prefix,
      USAGE_PARTITIONS: '2',
    });
    const publisher = createUsagePublisher({
      url: withLogin(adminUrl, users.proxy),
      topology: partitioned.topology,
      logger: createLogger({ name: 'proxy', level: 'silent' }),
      signer: createMessageSigner('proxy', parsePrivateKey(DEV_SERVICE_KEYS.proxy.privateKey)),
    });
    try {
      expect(partitioned.topology.partitions.map((p) => p.queue)).toEqual([
        `${prefix}.billing.usage.p0`,
        `${prefix}.billing.usage.p1`,
      ]);
      const events = Array.from({ length: 8 }, () => usageEvent({ account_id: randomUUID() }));
      for (const e of events) publisher.publish(e);
      expect(await publisher.flush(10_000)).toBe(true);
      expect(publisher.stats().unroutable).toBe(0);
      await vi.waitFor(
        async () =>
          expect(
            await partitioned.billing.db
              .selectFrom('billing.generations')
              .select('id')
              .where(
                'id',
                'in',
                events.map((e) => e.id),
              )
              .execute(),
          ).toHaveLength(events.length),
        { timeout: 15_000 },
      );
    } finally {
      await publisher.close();
      await partitioned.cleanup();
    }
  });

  it.each([
    ['consume', (ch: amqp.Channel, q: string) => ch.consume(q, () => {})],
    ['purge', (ch: amqp.Channel, q: string) => ch.purgeQueue(q)],
    ['delete', (ch: amqp.Channel, q: string) => ch.deleteQueue(q)],
    ['bind another exchange to', (ch: amqp.Channel, q: string) => ch.bindQueue(q, 'amq.topic', '#')],
  ])("refuses the proxy's broker user to %s billing's queue", async (_what, act) => {
    const conn = await amqp.connect(withLogin(adminUrl, users.proxy));
    conn.on('error', () => {});
    try {
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      await expect(act(ch, billing.topology.queue)).rejects.toThrow(/ACCESS_REFUSED/);
    } finally {
      await conn.close().catch(() => {});
    }
  });
});
