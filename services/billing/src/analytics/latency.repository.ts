import { sql } from 'kysely';
import type { BillingDb } from '../database';
import { filtersOf, GROUP_COLUMN, source, type UsageQuery } from './analytics.repository';
import { bucketColumns, HISTOGRAMS, type HistogramName } from './latency-rollup';

export interface LatencyRow {
  group: string | null;
  requests: string;
  errors: string;
  tokens_completion: string;
  ttft_ms: string;
  total_ms: string;
  gen_ms: string;
  overhead_us: string;
  /** Requests whose record carried a gateway overhead (records of older proxies have none). */
  overhead_n: string;
  /** Bucket counts per histogram (latency.ts), as pg returns sums of bigint: decimal strings. */
  hists: Record<HistogramName, string[]>;
}

/** `sum(ttft_b00)::text as ttft_b00, …` for every bucket column: one aggregate per column. */
const BUCKET_SUMS = sql.raw(
  HISTOGRAMS.flatMap(bucketColumns)
    .map((c) => `sum(${c})::text as ${c}`)
    .join(', '),
);

/**
 * Latency per model or provider over [from, to) from the latency roll-ups (`latency_hourly`, or
 * `latency_daily` over whole UTC days): a range scan of one account's rows, the sums per group and
 * one `sum()` per histogram bucket column, the `limit` groups with the most requests. Percentiles
 * are read from the summed histograms by the caller (latency.ts). Never touches billing.generations.
 */
export async function queryLatency(
  db: BillingDb,
  q: UsageQuery & { groupBy: 'model' | 'provider' | 'none'; limit: number },
): Promise<LatencyRow[]> {
  const s = source({ ...q, granularity: 'total' });
  const table = s.daily ? sql`billing.latency_daily` : sql`billing.latency_hourly`;
  const { rows } = await sql<Record<string, string | null>>`
    select ${GROUP_COLUMN[q.groupBy]}::text as "group", sum(requests)::text as requests,
      sum(errors)::text as errors, sum(tokens_completion)::text as tokens_completion,
      sum(ttft_ms)::text as ttft_ms, sum(total_ms)::text as total_ms, sum(gen_ms)::text as gen_ms,
      sum(overhead_us)::text as overhead_us, sum(overhead_n)::text as overhead_n, ${BUCKET_SUMS}
    from ${table}
    where account_id = ${q.accountId} and ${s.time} >= ${s.lower} and ${s.time} < ${s.upper}
      ${filtersOf({ ...q, filters: { ...q.filters, app: undefined } })}
    group by 1
    order by sum(requests) desc, 1 nulls first
    limit ${q.limit}`.execute(db);
  const text = (v: string | null | undefined) => v ?? '0';
  return rows.map((r) => ({
    group: r.group ?? null,
    requests: text(r.requests),
    errors: text(r.errors),
    tokens_completion: text(r.tokens_completion),
    ttft_ms: text(r.ttft_ms),
    total_ms: text(r.total_ms),
    gen_ms: text(r.gen_ms),
    overhead_us: text(r.overhead_us),
    overhead_n: text(r.overhead_n),
    hists: {
      ttft: bucketColumns('ttft').map((c) => text(r[c])),
      total: bucketColumns('total').map((c) => text(r[c])),
      overhead: bucketColumns('overhead').map((c) => text(r[c])),
    },
  }));
}
