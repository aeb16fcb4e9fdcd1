import { describe, expect, it } from 'vitest';
import { usageEvent } from '../../test/testing';
import { spendSums, sumBatchSpend } from './batch-spend';
import { toGenerationRow } from './generation-row';

const at = (id: string, keyId: string, accountId: string, iso: string, units: bigint) => ({
  e: usageEvent({ id, key_id: keyId, account_id: accountId, finished_at: iso, started_at: iso }),
  units,
});

describe('sumBatchSpend and spendSums', () => {
  // Sunday 2026-11-22 is in W47, Monday 2026-11-23 in W48.
  const batch = [
    at('gen-1', 'k2', 'a1', '2026-11-22T23:59:59.999Z', 10n),
    at('gen-2', 'k1', 'a1', '2026-11-23T00:00:00.000Z', 20n),
    at('gen-3', 'k1', 'a1', '2026-11-23T10:00:00.000Z', 0n),
    at('gen-4', 'k1', 'a2', '2026-11-23T11:00:00.000Z', 5n), // already recorded
  ];
  const events = batch.map((b) => b.e);
  const rows = events.map((e) => toGenerationRow(e, '0'));
  const units = batch.map((b) => b.units);
  const s = sumBatchSpend(events, rows, units, new Set(['gen-1', 'gen-2', 'gen-3']));

  it('adds the inserted events to each of their day’s four periods, per key and per account', () => {
    expect(s.newRecords.map((r) => [r.record.id, r.units])).toEqual([
      ['gen-1', 10n],
      ['gen-2', 20n],
      ['gen-3', 0n],
    ]);
    expect([...s.accountDeltas]).toEqual([['a1', 30n]]);
    expect(Object.fromEntries([...s.keyDeltas].map(([id, d]) => [id, d.units]))).toEqual({
      'k2|d2026-11-22': 10n,
      'k2|w2026-W47': 10n,
      'k2|m2026-11': 10n,
      'k2|all': 10n,
      'k1|d2026-11-23': 20n,
      'k1|w2026-W48': 20n,
      'k1|m2026-11': 20n,
      'k1|all': 20n,
    });
  });

  it('sorts the increments by key then period and account (lock order), and reads what was only touched', () => {
    const sums = spendSums(s);
    expect(sums.keySpend.map((k) => `${k.key_id}|${k.period}|${k.amount}`)).toEqual([
      'k1|all|0.000000002',
      'k1|d2026-11-23|0.000000002',
      'k1|m2026-11|0.000000002',
      'k1|w2026-W48|0.000000002',
      'k2|all|0.000000001',
      'k2|d2026-11-22|0.000000001',
      'k2|m2026-11|0.000000001',
      'k2|w2026-W47|0.000000001',
    ]);
    expect(sums.accountUsage).toEqual([{ account_id: 'a1', amount: '0.000000003' }]);
    // gen-4 (a2, already recorded) touched k1's periods of the 23rd (already added to) and a2.
    expect(sums.readKeySpend).toEqual([]);
    expect(sums.readAccounts).toEqual(['a2']);
  });

  it('reads every touched pair when nothing was inserted (a redelivery)', () => {
    const none = spendSums(sumBatchSpend(events, rows, units, new Set()));
    expect(none.keySpend).toEqual([]);
    expect(none.readKeySpend).toHaveLength(8);
    expect(none.readAccounts).toEqual(['a1', 'a2']);
  });
});
