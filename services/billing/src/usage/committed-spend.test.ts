import { describe, expect, it } from 'vitest';
import { usageEvent } from '../../test/testing';
import { committedSpend } from './committed-spend';

describe('committedSpend', () => {
  it('gives each key its touched periods’ committed totals and request ids, each account its usage', () => {
    const events = [
      usageEvent({ id: 'gen-1', key_id: 'k1', account_id: 'a1' }),
      usageEvent({ id: 'gen-2', key_id: 'k1', account_id: 'a1' }),
      usageEvent({ id: 'gen-3', key_id: 'k2', account_id: 'a2' }),
    ];
    const touched = new Map([
      ['k1|d1', { keyId: 'k1', period: 'd1' }],
      ['k1|all', { keyId: 'k1', period: 'all' }],
      ['k2|all', { keyId: 'k2', period: 'all' }],
    ]);
    const out = committedSpend(events, touched, {
      keys: [
        { key_id: 'k1', period: 'd1', amount: '0.5' },
        { key_id: 'k1', period: 'all', amount: '1.5' },
      ],
      accounts: [{ account_id: 'a1', amount: '2' }],
    });
    expect(out.keys).toEqual([
      {
        keyId: 'k1',
        accountId: 'a1',
        totals: [
          ['d1', 5_000_000_000n],
          ['all', 15_000_000_000n],
        ],
        requestIds: ['gen-1', 'gen-2'],
      },
      { keyId: 'k2', accountId: 'a2', totals: [['all', 0n]], requestIds: ['gen-3'] }, // no total yet: 0
    ]);
    expect(out.accounts).toEqual([
      { accountId: 'a1', usageUnits: 20_000_000_000n, requestIds: ['gen-1', 'gen-2'] },
      { accountId: 'a2', usageUnits: 0n, requestIds: ['gen-3'] },
    ]);
  });
});
