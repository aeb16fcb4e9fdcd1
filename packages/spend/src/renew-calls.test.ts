import { describe, expect, it } from 'vitest';
import { RENEW_CHUNK, renewCalls } from './renew-calls';
import type { Lease } from './store-types';

const hashes = {
  keyHash: (id: string) => `K:${id}`,
  accountHash: (id: string) => `A:${id}`,
  teamHash: (a: string, id: string) => `T:${a}:${id}`,
};
const lease = (requestId: string, o: Partial<Lease> = {}): Lease => ({
  keyId: 'k1',
  accountId: 'a1',
  requestId,
  keyTracked: true,
  accountTracked: true,
  units: 4n,
  ...o,
});

describe('renewCalls', () => {
  it('one entry per held hash: a key carries its limit and period, an account nothing', () => {
    const calls = [
      ...renewCalls(
        [lease('r1', { limitUnits: 100n, period: 'd1' }), lease('r2', { keyTracked: false, units: -1n })],
        hashes,
      ),
    ];
    expect(calls).toHaveLength(1);
    expect(calls[0]?.keys).toEqual(['K:k1', 'A:a1', 'A:a1']);
    expect(calls[0]?.args).toEqual(['r1', '4', 'k', '100|d1', 'r1', '4', 'a', '', 'r2', '0', 'a', '']);
    expect(calls[0]?.owners.map((l) => l.requestId)).toEqual(['r1', 'r1', 'r2']);
  });

  it('writes an unlimited key as an empty limit and period', () => {
    const [call] = [...renewCalls([lease('r', { accountTracked: false, limitUnits: null })], hashes)];
    expect(call?.args).toEqual(['r', '4', 'k', '|']);
  });

  it(`cuts a call at ${RENEW_CHUNK} entries and yields nothing for no leases`, () => {
    const leases = Array.from({ length: RENEW_CHUNK }, (_, i) => lease(`r${i}`));
    expect([...renewCalls(leases, hashes)].map((c) => c.keys.length)).toEqual([RENEW_CHUNK, RENEW_CHUNK]);
    expect([...renewCalls([], hashes)]).toEqual([]);
  });

  it('reads the leases lazily: one removed from a live map before its chunk is asked for is not renewed', () => {
    const live = new Map(Array.from({ length: RENEW_CHUNK }, (_, i) => [`r${i}`, lease(`r${i}`)] as const));
    const calls = renewCalls(live.values(), hashes);
    expect(calls.next().value?.keys).toHaveLength(RENEW_CHUNK); // 500 leases, key and account each
    live.delete(`r${RENEW_CHUNK - 1}`); // settled while the first chunk was in flight
    const second = calls.next().value;
    expect(second?.keys).toHaveLength(RENEW_CHUNK - 2);
    expect(second?.owners.some((l: { requestId: string }) => l.requestId === `r${RENEW_CHUNK - 1}`)).toBe(
      false,
    );
    expect(calls.next().done).toBe(true);
  });
});
