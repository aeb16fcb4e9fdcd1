import { describe, expect, it } from 'vitest';
import { createCommittedBacklog } from './committed-backlog';

describe('committed backlog', () => {
  it('merges updates per key and account: highest totals, every request id once', () => {
    const b = createCommittedBacklog();
    expect(b.empty).toBe(true);
    b.add(
      [
        {
          keyId: 'k',
          totals: [
            ['d1', 5n],
            ['all', 9n],
          ],
          requestIds: ['r1', 'r2'],
        },
      ],
      [{ accountId: 'a', usageUnits: 9n, requestIds: ['r1', 'r2'] }],
    );
    b.add(
      [
        {
          keyId: 'k',
          totals: [
            ['d1', 4n],
            ['all', 12n],
          ],
          requestIds: ['r2', 'r3'],
        },
      ],
      [{ accountId: 'a', usageUnits: 7n, requestIds: ['r3'] }],
    );
    expect(b.ids).toBe(6);
    expect(b.take()).toEqual({
      keys: [
        {
          keyId: 'k',
          totals: [
            ['d1', 5n],
            ['all', 12n],
          ],
          requestIds: ['r1', 'r2', 'r3'],
        },
      ],
      accounts: [{ accountId: 'a', usageUnits: 9n, requestIds: ['r1', 'r2', 'r3'] }],
    });
    expect(b.ids).toBe(0);
    expect(b.empty).toBe(true);
    expect(b.take()).toEqual({ keys: [], accounts: [] });
  });

  it('keeps the account of a team hash (a team entry of the commit) through the merge', () => {
    const b = createCommittedBacklog();
    b.add([{ keyId: 't1', teamOfAccount: 'a1', totals: [['all', 1n]], requestIds: ['r1'] }], []);
    b.add([{ keyId: 't1', teamOfAccount: 'a1', totals: [['all', 2n]], requestIds: ['r2'] }], []);
    b.add([{ keyId: 'k1', totals: [['all', 3n]], requestIds: ['r3'] }], []);
    expect(b.take().keys).toEqual([
      { keyId: 't1', teamOfAccount: 'a1', totals: [['all', 2n]], requestIds: ['r1', 'r2'] },
      { keyId: 'k1', totals: [['all', 3n]], requestIds: ['r3'] },
    ]);
  });
});
