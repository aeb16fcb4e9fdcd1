import { BUCKETS, bucketOf, generatingMs } from './latency';
import { dayOf, hourOf, type RollupRecord } from './usage-rollup';

/** The three histograms of a latency roll-up row (migration 2026_11_27_120000_latency_rollups). */
export const HISTOGRAMS = ['ttft', 'total', 'overhead'] as const;
export type HistogramName = (typeof HISTOGRAMS)[number];

/** `ttft_b00` … `ttft_b24`: the bucket columns of one histogram. */
export const bucketColumns = (hist: HistogramName): string[] =>
  Array.from({ length: BUCKETS }, (_, k) => `${hist}_b${String(k).padStart(2, '0')}`);

/** One latency roll-up row's increment (per account, hour|day, key, model, provider). */
export interface LatencyRollupRow {
  account_id: string;
  /** `hour` (timestamptz) or `day` (date), per resolution. */
  bucket: string;
  key_id: string;
  model: string;
  provider_name: string;
  requests: number;
  errors: number;
  tokens_completion: number;
  ttft_ms: number;
  total_ms: number;
  /** The time spent generating output (latency.ts generatingMs): tokens per second's denominator. */
  gen_ms: number;
  /** Sum and count of the records that carried a gateway overhead (µs). */
  overhead_us: number;
  overhead_n: number;
  /** Bucket counts (latency.ts): time to first token and total in ms, overhead in µs. */
  ttft: number[];
  total: number[];
  overhead: number[];
}

const empty = (): number[] => Array<number>(BUCKETS).fill(0);

/**
 * Sums records into one increment per latency roll-up row of the given resolution, sorted by
 * primary key (the same lock order in every worker). Sums of a batch stay far below 2^53.
 */
export function latencyRows(
  records: readonly { record: RollupRecord }[],
  resolution: 'hour' | 'day',
): LatencyRollupRow[] {
  const timeOf = resolution === 'hour' ? hourOf : dayOf;
  const byRow = new Map<string, LatencyRollupRow>();
  for (const { record: e } of records) {
    const bucket = timeOf(e.finished_at);
    // Text fields hold no NUL (the event schema drops it): an unambiguous separator.
    const id = `${e.account_id}\u0000${bucket}\u0000${e.key_id}\u0000${e.model}\u0000${e.provider_name}`;
    let r = byRow.get(id);
    if (!r) {
      r = {
        account_id: e.account_id,
        bucket,
        key_id: e.key_id,
        model: e.model,
        provider_name: e.provider_name,
        requests: 0,
        errors: 0,
        tokens_completion: 0,
        ttft_ms: 0,
        total_ms: 0,
        gen_ms: 0,
        overhead_us: 0,
        overhead_n: 0,
        ttft: empty(),
        total: empty(),
        overhead: empty(),
      };
      byRow.set(id, r);
    }
    r.requests += 1;
    if (e.error !== null) r.errors += 1;
    r.tokens_completion += e.tokens_completion;
    r.ttft_ms += e.latency_ms;
    r.total_ms += e.generation_time_ms;
    r.gen_ms += generatingMs(e.streamed, e.latency_ms, e.generation_time_ms);
    (r.ttft[bucketOf(e.latency_ms)] as number) += 1;
    (r.total[bucketOf(e.generation_time_ms)] as number) += 1;
    if (e.gateway_overhead_us !== null) {
      r.overhead_us += e.gateway_overhead_us;
      r.overhead_n += 1;
      (r.overhead[bucketOf(e.gateway_overhead_us)] as number) += 1;
    }
  }
  return [...byRow.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

const SUMS = [
  'requests',
  'errors',
  'tokens_completion',
  'ttft_ms',
  'total_ms',
  'gen_ms',
  'overhead_us',
  'overhead_n',
];
const ALL_BUCKETS = HISTOGRAMS.flatMap(bucketColumns);

/**
 * The upsert of a resolution's increments (`$rows`: the JSON of `latencyRows`), for applyBatchSums'
 * one statement: each histogram arrives as an array and lands in its bucket columns.
 */
function latencyUpsertSql(resolution: 'hour' | 'day'): { head: string; tail: string } {
  const table = resolution === 'hour' ? 'billing.latency_hourly' : 'billing.latency_daily';
  const cast = resolution === 'hour' ? 'timestamptz' : 'date';
  const pick = HISTOGRAMS.flatMap((h) => bucketColumns(h).map((_, k) => `r.${h}[${k + 1}]`));
  const columns = [...SUMS, ...ALL_BUCKETS];
  return {
    head: `insert into ${table} as t (account_id, ${resolution}, key_id, model, provider_name, ${columns.join(', ')})
      select r.account_id, r.bucket::${cast}, r.key_id, r.model, r.provider_name, ${SUMS.map((c) => `r.${c}`).join(', ')},
        ${pick.join(', ')}
      from json_to_recordset(`,
    tail: `) as r(account_id uuid, bucket text, key_id uuid, model text, provider_name text,
        ${SUMS.map((c) => `${c} bigint`).join(', ')}, ${HISTOGRAMS.map((h) => `${h} bigint[]`).join(', ')})
      on conflict (account_id, ${resolution}, key_id, model, provider_name) do update set
        ${columns.map((c) => `${c} = t.${c} + excluded.${c}`).join(', ')}`,
  };
}

/** The two upserts, built once. */
export const LATENCY_UPSERT = { hour: latencyUpsertSql('hour'), day: latencyUpsertSql('day') } as const;
