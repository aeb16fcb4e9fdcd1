import { describe, expect, it } from 'vitest';
import { BUCKETS, bucketOf, emptyHist, percentile } from './latency';

describe('latency histograms', () => {
  it('puts each value in the bucket whose bounds hold it', () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(24)).toBe(0);
    expect(bucketOf(25)).toBe(1);
    expect(bucketOf(35)).toBe(1);
    expect(bucketOf(36)).toBe(2);
    expect(bucketOf(1000)).toBe(11);
    expect(bucketOf(10_000_000)).toBe(BUCKETS - 1);
  });

  it('reads percentiles within ~20 % of the exact ones', () => {
    const values = Array.from({ length: 1000 }, (_, i) => 40 + i * 3); // 40 … 3037 ms
    const hist = emptyHist();
    for (const v of values) hist[bucketOf(v)]! += 1;
    for (const p of [0.5, 0.9, 0.99]) {
      const exact = values[Math.ceil(p * values.length) - 1]!;
      const read = percentile(hist, p)!;
      expect(Math.abs(read - exact) / exact, `p${p * 100}`).toBeLessThan(0.2);
    }
    expect(percentile(emptyHist(), 0.5)).toBeNull();
  });
});
