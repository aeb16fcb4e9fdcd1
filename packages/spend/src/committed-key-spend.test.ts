import { randomUUID } from 'node:crypto';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCommittedKeySpend } from './committed-key-spend';
import { spendKeyHash } from './keys';

let r: TestRedis;
beforeAll(async () => {
  r = await createTestRedis();
});
afterAll(async () => {
  await r.cleanup();
});

describe('readCommittedKeySpend (real Redis)', () => {
  it('reads built hashes per period (absent field = 0), and null for a missing or unbuilt hash', async () => {
    const [built, unbuilt, missing] = [randomUUID(), randomUUID(), randomUUID()];
    await r.client.hset(spendKeyHash(r.prefix, built), { _ok: '1', 'd2026-11-20': '15', all: '40' });
    await r.client.hset(spendKeyHash(r.prefix, unbuilt), { _rb: '1', all: '99' });
    const out = await readCommittedKeySpend(
      r.client,
      r.prefix,
      [built, unbuilt, missing],
      ['d2026-11-20', 'm2026-11', 'all'],
    );
    expect(out.get(built)).toEqual(
      new Map([
        ['d2026-11-20', 15n],
        ['m2026-11', 0n],
        ['all', 40n],
      ]),
    );
    expect(out.get(unbuilt)).toBeNull();
    expect(out.get(missing)).toBeNull();
  });

  it('reads one key without a pipeline, and nothing for no keys', async () => {
    const id = randomUUID();
    await r.client.hset(spendKeyHash(r.prefix, id), { _ok: '1', all: '123456789012345678901234' });
    expect((await readCommittedKeySpend(r.client, r.prefix, [id], ['all'])).get(id)?.get('all')).toBe(
      123456789012345678901234n,
    );
    expect((await readCommittedKeySpend(r.client, r.prefix, [], ['all'])).size).toBe(0);
  });
});
