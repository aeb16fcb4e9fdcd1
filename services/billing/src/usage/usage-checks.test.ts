import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { computeCost, loadCatalog } from '@tollgate/catalog';
import { createMessageSigner, inspectDeadLetters, type UsageEventV1 } from '@tollgate/events';
import { toDecimal } from '@tollgate/money';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  registerTestKey,
  signedHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';

/**
 * Issue 23, "Billing trusts what the proxy says": every usage check on, against the real broker,
 * database and catalog. Each refused message must land in the dead-letter queue with its reason and
 * record nothing.
 */
let s: TestBillingStack;
const catalog = loadCatalog(
  new URL('../../../../infra/catalog/dev.yaml', import.meta.url).pathname,
  {},
  {
    pricesOnly: true,
  },
);

beforeAll(async () => {
  s = await startTestBilling({ USAGE_CHECKS: 'signature,cost,key,time' });
});
afterAll(async () => {
  await s.cleanup();
});

/** An event as the proxy makes it: a registered key of the account, its cost from its tokens. */
function honest(overrides: Partial<UsageEventV1> = {}): UsageEventV1 {
  const e = usageEvent({ model: 'openai/gpt-4o-mini', ...overrides });
  if (!overrides.key_id) registerTestKey({ keyId: e.key_id, accountId: e.account_id });
  const model = catalog.model(e.model);
  if (!model) throw new Error(`no ${e.model} in the dev catalog`);
  const cost = computeCost(model, {
    prompt: e.tokens.prompt,
    completion: e.tokens.completion,
    cached: e.tokens.cached,
    cacheWrite: e.tokens.cache_write,
    reasoning: e.tokens.reasoning,
  });
  return { ...e, cost: overrides.cost ?? toDecimal(cost) };
}

async function publishRaw(body: Buffer, headers?: Record<string, unknown>) {
  const conn = await amqp.connect(s.config.AMQP_URL);
  try {
    const ch = await conn.createConfirmChannel();
    // To the body's account's usage partition, as the proxy routes it.
    const account = (JSON.parse(body.toString()) as { account_id: string }).account_id;
    ch.publish(s.topology.exchange, s.routingKeyOf(account), body, { persistent: true, headers });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

const recorded = async (id: string) =>
  (await s.billing.db.selectFrom('billing.generations').select('id').where('id', '=', id).execute()).length;

/** Waits for the dead letter of `id` and answers its reason. */
async function deadLetterReason(id: string): Promise<string> {
  let reason = '';
  await vi.waitFor(
    async () => {
      const report = await inspectDeadLetters(s.config.AMQP_URL, s.topology, 100);
      const letter = report.messages.find((m) => m.id === id);
      expect(letter, JSON.stringify(report)).toBeDefined();
      expect(letter?.death).toBe('refused');
      reason = letter?.reason ?? '';
    },
    { timeout: 10_000 },
  );
  return reason;
}

describe('billing verifies usage events (issue 23)', () => {
  it('records an event the proxy signed whose cost, key and time check out', async () => {
    const e = honest();
    await s.publish(e);
    await vi.waitFor(async () => expect(await recorded(e.id)).toBe(1), { timeout: 10_000 });
  });

  it("refuses an unsigned event (the proxy's broker credentials alone) and dead-letters it with the reason", async () => {
    const victim = randomUUID();
    const e = honest({ account_id: victim, cost: '999999' });
    await publishRaw(Buffer.from(JSON.stringify(e)));
    expect(await deadLetterReason(e.id)).toBe('signature: the message is not signed');
    expect(await recorded(e.id)).toBe(0);
  });

  it("refuses an event signed with any key but the proxy's, or altered after signing", async () => {
    const forger = createMessageSigner('proxy', generateKeyPairSync('ed25519').privateKey);
    const forged = honest();
    const body = Buffer.from(JSON.stringify(forged));
    await publishRaw(body, forger.headers(body, Date.now()));
    expect(await deadLetterReason(forged.id)).toBe("signature: does not verify with proxy's public key");

    const original = honest();
    const headers = signedHeaders(Buffer.from(JSON.stringify(original)));
    const altered = { ...original, cost: '999999' };
    await publishRaw(Buffer.from(JSON.stringify(altered)), headers);
    expect(await deadLetterReason(original.id)).toMatch(/^signature: does not verify/);
    expect((await recorded(forged.id)) + (await recorded(original.id))).toBe(0);
  });

  it('refuses a signed event whose cost is not what its tokens cost in billing’s catalog', async () => {
    const e = honest({ cost: '999999' });
    await s.publish(e);
    expect(await deadLetterReason(e.id)).toBe(
      `event ${e.id}: cost 999999 does not match 0.0000135 recomputed from its tokens with billing's catalog`,
    );
    expect(await recorded(e.id)).toBe(0);
  });

  it("refuses a signed event whose tokens no request can produce (above the model's worst case)", async () => {
    const e = honest({
      tokens: { prompt: 10 ** 12, completion: 0, cached: 0, cache_write: 0, reasoning: 0 },
    });
    await s.publish(e);
    expect(await deadLetterReason(e.id)).toMatch(
      new RegExp(
        `^event ${e.id}: cost \\S+ exceeds \\S+, the most one request to openai/gpt-4o-mini can cost$`,
      ),
    );
  });

  it('refuses a model billing does not price', async () => {
    const e = { ...honest(), model: 'vendor/unpriced' };
    await s.publish(e);
    expect(await deadLetterReason(e.id)).toBe(
      `event ${e.id}: model "vendor/unpriced" is not in billing's catalog`,
    );
  });

  it("refuses a signed event whose key belongs to another account (or to no one), recording the batch's others", async () => {
    const owner = randomUUID();
    const keyId = randomUUID();
    registerTestKey({ keyId, accountId: owner });
    const theft = honest({ key_id: keyId, account_id: randomUUID() });
    const ghost = honest({ key_id: randomUUID() });
    const fine = honest({ key_id: keyId, account_id: owner });
    await s.publish(theft, fine, ghost);
    expect(await deadLetterReason(theft.id)).toBe(
      `event ${theft.id}: key ${keyId} does not belong to account ${theft.account_id}`,
    );
    expect(await deadLetterReason(ghost.id)).toBe(
      `event ${ghost.id}: key ${ghost.key_id} is unknown to the keys service`,
    );
    await vi.waitFor(async () => expect(await recorded(fine.id)).toBe(1), { timeout: 10_000 });
    expect((await recorded(theft.id)) + (await recorded(ghost.id))).toBe(0);
  });

  it('refuses finished_at far from when the event was sent, and a sent-at time in the future', async () => {
    const old = honest({ finished_at: new Date(Date.now() - 60 * 60_000).toISOString() });
    await s.publish(old);
    expect(await deadLetterReason(old.id)).toBe(
      `event ${old.id}: finished_at ${old.finished_at} is more than 10 min before the signed sent-at time`,
    );
    const ahead = honest({ finished_at: new Date(Date.now() + 60 * 60_000).toISOString() });
    await s.publish(ahead);
    expect(await deadLetterReason(ahead.id)).toBe(
      `event ${ahead.id}: finished_at ${ahead.finished_at} is after the signed sent-at time`,
    );
    const future = honest();
    const body = Buffer.from(JSON.stringify(future));
    await publishRaw(body, signedHeaders(body, Date.now() + 60 * 60_000));
    expect(await deadLetterReason(future.id)).toMatch(/^signature: sent-at \S+ is in the future$/);
  });

  it('accepts an event spooled long ago: it is signed with its own hand-over time', async () => {
    const finished = Date.now() - 3 * 60 * 60_000;
    const e = honest({ finished_at: new Date(finished).toISOString() });
    const body = Buffer.from(JSON.stringify(e));
    await publishRaw(body, signedHeaders(body, finished));
    await vi.waitFor(async () => expect(await recorded(e.id)).toBe(1), { timeout: 10_000 });
  });
});
