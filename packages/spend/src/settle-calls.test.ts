import { describe, expect, it } from 'vitest';
import { failedSettles, planSettleCalls, SETTLE_CHUNK } from './settle-calls';
import type { SettleArgs } from './store-types';

const opts = {
  pendingTtlMs: 1000,
  hashTtlSeconds: 60,
  keyHash: (id: string) => `K:${id}`,
  accountHash: (id: string) => `A:${id}`,
  teamHash: (a: string, id: string) => `T:${a}:${id}`,
};
const settle = (requestId: string, o: Partial<SettleArgs> = {}): SettleArgs => ({
  keyId: 'k1',
  accountId: 'a1',
  requestId,
  costUnits: 7n,
  keyTracked: true,
  accountTracked: true,
  now: 5000,
  ...o,
});

describe('planSettleCalls', () => {
  it('groups members by hash in one call: the hash TTL, the number of hashes, then per hash its count and members', () => {
    const calls = planSettleCalls([settle('r1'), settle('r2', { accountTracked: false })], opts);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.keys).toEqual(['K:k1', 'A:a1']);
    expect(calls[0]?.args).toEqual([
      '60',
      '2',
      '2',
      'r1',
      '7',
      '6000',
      'r2',
      '7',
      '6000',
      '1',
      'r1',
      '7',
      '6000',
    ]);
  });

  it('skips settles that hold nothing, and settles a negative cost as 0', () => {
    const calls = planSettleCalls(
      [
        settle('r1', { keyTracked: false, accountTracked: false }),
        settle('r2', { costUnits: -3n, keyTracked: false }),
      ],
      opts,
    );
    expect(calls.map((c) => c.args)).toEqual([['60', '1', '1', 'r2', '0', '6000']]);
    expect(planSettleCalls([settle('r', { keyTracked: false, accountTracked: false })], opts)).toEqual([]);
  });

  it('sends a request settled twice in one list in a later call, so the second sees the first', () => {
    const calls = planSettleCalls([settle('r1'), settle('r2'), settle('r1', { costUnits: 9n })], opts);
    expect(calls).toHaveLength(2);
    expect(calls[1]?.args).toEqual(['60', '2', '1', 'r1', '9', '6000', '1', 'r1', '9', '6000']);
  });

  it('adds the team hash (issue 29) and the token-rate refunds after the hashes, summed per counter', () => {
    const refund = (tokens: number) => ({ counterKeys: ['tpm:k1', 'tpm:team'], tokens });
    const calls = planSettleCalls(
      [
        settle('r1', { team: { teamId: 't1' }, tokenRefund: refund(30) }),
        settle('r2', { keyTracked: false, accountTracked: false, tokenRefund: refund(12) }),
        settle('r3', { keyTracked: false, accountTracked: false, tokenRefund: refund(0) }),
      ],
      opts,
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]?.keys).toEqual(['K:k1', 'T:a1:t1', 'A:a1', 'tpm:k1', 'tpm:team']);
    expect(calls[0]?.args).toEqual([
      '60',
      '3',
      '1',
      'r1',
      '7',
      '6000',
      '1',
      'r1',
      '7',
      '6000',
      '1',
      'r1',
      '7',
      '6000',
      '42',
      '42',
    ]);
  });

  it(`cuts a call at ${SETTLE_CHUNK} members`, () => {
    const list = Array.from({ length: SETTLE_CHUNK }, (_, i) => settle(`r${i}`, { keyId: `k${i}` }));
    const calls = planSettleCalls(list, opts);
    // Two members per settle (key and account): a call is full after SETTLE_CHUNK / 2 settles.
    expect(calls).toHaveLength(2);
    expect(calls[0]?.keys).toHaveLength(SETTLE_CHUNK / 2 + 1);
  });

  it('maps the failed hash indexes of a reply back to their request ids', () => {
    const [call] = planSettleCalls(
      [settle('r1', { accountTracked: false }), settle('r2', { keyId: 'k2' })],
      opts,
    );
    if (!call) throw new Error('no call');
    expect(call.keys).toEqual(['K:k1', 'K:k2', 'A:a1']);
    expect(failedSettles(call, [2])).toEqual(['r2']);
    expect(failedSettles(call, [3])).toEqual(['r2']);
    expect(failedSettles(call, [])).toEqual([]);
  });
});
