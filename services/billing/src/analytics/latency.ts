/**
 * Latency histograms of the roll-ups: bucket k (0 ≤ k < 24) holds values below 25·2^(k/2) ms (25 ms,
 * 35 ms, 50 ms, … 72 s), bucket 24 the rest. A factor of √2 per bucket: a percentile read from them
 * (interpolated inside its bucket) is within ~20 % of the exact one, from a fixed 25 numbers per row.
 */
export const BUCKETS = 25;
const upper = (k: number) => 25 * 2 ** (k / 2);

export function bucketOf(ms: number): number {
  if (ms < 25) return 0;
  return Math.min(BUCKETS - 1, Math.floor(2 * Math.log2(ms / 25)) + 1);
}

/** An empty histogram. */
export const emptyHist = (): number[] => Array<number>(BUCKETS).fill(0);

/** The `p`-th percentile (0 < p < 1) of the values a histogram counts; null when it counts none. */
export function percentile(hist: readonly number[], p: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = p * total;
  let seen = 0;
  for (let k = 0; k < hist.length; k++) {
    const n = hist[k] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const lo = k === 0 ? 0 : upper(k - 1);
      const hi = k >= BUCKETS - 1 ? upper(BUCKETS - 1) * 2 : upper(k);
      return Math.round(lo + ((rank - seen) / n) * (hi - lo));
    }
    seen += n;
  }
  return Math.round(upper(BUCKETS - 1));
}

/**
 * The time a request spent generating its output (the denominator of tokens per second): after the
 * first token when streamed, the whole time when not (a JSON answer's first byte is its last).
 */
export const generatingMs = (streamed: boolean, ttftMs: number, totalMs: number): number =>
  streamed ? Math.max(0, totalMs - ttftMs) : totalMs;

/** Tokens per second to one decimal, or null when there is nothing to divide. */
export const tokensPerSecond = (tokens: number, ms: number): number | null =>
  ms > 0 && tokens > 0 ? Math.round((tokens / ms) * 10_000) / 10 : null;

/** Microseconds as milliseconds to the µs (412 → 0.412). */
export const usToMs = (us: number): number => Math.round(us) / 1000;
