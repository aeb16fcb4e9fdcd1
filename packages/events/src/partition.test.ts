import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseUsagePartitionList, usagePartition, usagePartitionsEnv } from './partition';
import { usageTopology } from './topology';

describe('usagePartition', () => {
  it('is FNV-1a 32-bit (the published test vectors): stable across processes and versions', () => {
    const all = 2 ** 32 - 1; // modulo a number above every hash below: the hash itself
    expect(usagePartition('a', all)).toBe(0xe40c292c);
    expect(usagePartition('foobar', all)).toBe(0xbf9cf968);
    // Pinned routes of real-looking account ids: changing the function would move accounts between
    // queues under running proxies (and break per-account order), so it must never change.
    expect(usagePartition('6f1c1f8e-5a1b-4c1e-9a4e-2f7b8c9d0e1f', 2)).toBe(1);
    expect(usagePartition('7a2d2e9f-6b2c-4d2f-8b5f-3a8c9d0e1f2a', 2)).toBe(0);
    expect(usagePartition('7a2d2e9f-6b2c-4d2f-8b5f-3a8c9d0e1f2a', 16)).toBe(14);
  });

  it('puts every account of N partitions in [0, N), the same one every time, and spreads them', () => {
    const accounts = Array.from({ length: 4000 }, () => randomUUID());
    for (const n of [1, 2, 3, 7, 16, 64]) {
      const counts = new Array<number>(n).fill(0);
      for (const a of accounts) {
        const p = usagePartition(a, n);
        expect(Number.isInteger(p) && p >= 0 && p < n).toBe(true);
        expect(usagePartition(a, n)).toBe(p);
        counts[p] = (counts[p] ?? 0) + 1;
      }
      // Roughly even: each partition within ±35 % of its share (4000 accounts).
      for (const c of counts) expect(Math.abs(c - 4000 / n)).toBeLessThan((4000 / n) * 0.35 + 5);
    }
  });

  it('with one partition every account is 0', () => {
    expect(usagePartition(randomUUID(), 1)).toBe(0);
  });
});

describe('parseUsagePartitionList (USAGE_WORKER_PARTITIONS)', () => {
  it('all / empty: every partition; lists and ranges, sorted and distinct', () => {
    expect(parseUsagePartitionList('all', 3)).toEqual([0, 1, 2]);
    expect(parseUsagePartitionList('', 2)).toEqual([0, 1]);
    expect(parseUsagePartitionList('3, 0-1,1', 4)).toEqual([0, 1, 3]);
  });

  it('refuses what names no partition of N, saying why', () => {
    expect(() => parseUsagePartitionList('2', 2)).toThrow(
      /partition 2 does not exist: USAGE_PARTITIONS=2 has 0\.\.1/,
    );
    expect(() => parseUsagePartitionList('1-0', 2)).toThrow(/reversed/);
    expect(() => parseUsagePartitionList('x', 2)).toThrow(/not a partition index/);
    expect(() => parseUsagePartitionList('-1', 2)).toThrow(/not a partition index/);
  });
});

describe('USAGE_PARTITIONS', () => {
  it('defaults to 1 and takes 1..64', () => {
    expect(usagePartitionsEnv.parse(undefined)).toBe(1);
    expect(usagePartitionsEnv.parse('4')).toBe(4);
    for (const bad of ['0', '65', '1.5', 'x']) expect(usagePartitionsEnv.safeParse(bad).success).toBe(false);
    expect(() => usageTopology('t', 0)).toThrow(/1\.\.64/);
  });
});
