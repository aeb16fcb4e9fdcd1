import { z } from 'zod';
import { MAX_USAGE_PARTITIONS } from './topology';

/** USAGE_PARTITIONS (proxy and billing, the same value on both): 1..64, default 1. */
export const usagePartitionsEnv = z.coerce.number().int().min(1).max(MAX_USAGE_PARTITIONS).default(1);

/**
 * The usage partition of an account: FNV-1a (32-bit) of its id's UTF-16 code units, modulo the
 * number of partitions. Stable across processes, restarts and versions (it is part of the wire
 * contract: every proxy must route an account to the same queue), and cheap (no allocation).
 */
export function usagePartition(accountId: string, partitions: number): number {
  if (partitions <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < accountId.length; i++) {
    h ^= accountId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}

/**
 * The partitions named by `spec` (a billing worker's USAGE_WORKER_PARTITIONS): `all` (or empty), or a
 * comma-separated list of indexes and ranges (`0,2-3`), each in [0, partitions). Sorted, distinct.
 * Throws with a message naming the problem.
 */
export function parseUsagePartitionList(spec: string, partitions: number): number[] {
  const text = spec.trim();
  if (text === '' || text === 'all') return Array.from({ length: partitions }, (_, i) => i);
  const chosen = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m) throw new Error(`"${part.trim()}" is not a partition index or range (e.g. 0,2-3)`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from) throw new Error(`range ${part.trim()} is reversed`);
    if (to >= partitions)
      throw new Error(
        `partition ${to} does not exist: USAGE_PARTITIONS=${partitions} has 0..${partitions - 1}`,
      );
    for (let i = from; i <= to; i++) chosen.add(i);
  }
  return [...chosen].sort((a, b) => a - b);
}
