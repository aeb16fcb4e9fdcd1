import { describe, expect, it } from 'vitest';
import { COMMIT_CHUNK, planCommitCalls } from './commit-calls';

const opts = {
  now: 9,
  tombstoneTtlMs: 100,
  hashTtlSeconds: 60,
  keyHash: (id: string) => `K:${id}`,
  accountHash: (id: string) => `A:${id}`,
  teamHash: (a: string, id: string) => `T:${a}:${id}`,
};

describe('planCommitCalls', () => {
  it('a key carries its period totals, an account its usage, then the request ids', () => {
    const calls = planCommitCalls(
      [
        {
          keyId: 'k',
          totals: [
            ['d1', 5n],
            ['all', 7n],
          ],
          requestIds: ['r1', 'r2'],
        },
      ],
      [{ accountId: 'a', usageUnits: 12n, requestIds: ['r1'] }],
      opts,
    );
    expect(calls).toEqual([
      { hash: 'K:k', args: [9, 100, 60, 2, 'd1', '5', 'all', '7', 'r1', 'r2'] },
      { hash: 'A:a', args: [9, 100, 60, 1, 'usage', '12', 'r1'] },
    ]);
  });

  it('raises the counters once even when no request is listed', () => {
    expect(planCommitCalls([], [{ accountId: 'a', usageUnits: 1n, requestIds: [] }], opts)).toEqual([
      { hash: 'A:a', args: [9, 100, 60, 1, 'usage', '1'] },
    ]);
  });

  it(`splits the request ids into calls of ${COMMIT_CHUNK}, each with the whole totals`, () => {
    const ids = Array.from({ length: COMMIT_CHUNK + 1 }, (_, i) => `r${i}`);
    const calls = planCommitCalls([{ keyId: 'k', totals: [['all', 3n]], requestIds: ids }], [], opts);
    expect(calls.map((c) => c.args.length)).toEqual([6 + COMMIT_CHUNK, 7]);
    expect(calls[1]?.args).toEqual([9, 100, 60, 1, 'all', '3', `r${COMMIT_CHUNK}`]);
  });
});
