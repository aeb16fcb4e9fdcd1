import { toDecimal } from '@tollgate/money';

/** What a generation record adds to the roll-ups (the fields of a `GenerationRow` they read). */
export interface RollupRecord {
  account_id: string;
  key_id: string;
  model: string;
  app: string | null;
  provider_name: string;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  /** ISO 8601 UTC (`…Z`), as validated by the usage-event schema. */
  finished_at: string;
  streamed: boolean;
  /** Request start to first byte from the provider (time to first token). */
  latency_ms: number;
  /** Request start to end of generation (total). */
  generation_time_ms: number;
  /** The time the gateway itself added (µs); null when the event did not carry it. */
  gateway_overhead_us: number | null;
  /** The upstream error that ended the request, if any. */
  error: { code: number } | null;
}

/** `finished_at` of an event: validated `YYYY-MM-DDTHH:MM:SS[.fff…]Z`, so its UTC fields are slices. */
const isUtcIso = (s: string) => s.length >= 20 && s.charCodeAt(10) === 84 /* T */ && s.endsWith('Z');

/** The UTC hour a record counts in: the hour of its `finished_at`, like the spend periods. */
export const hourOf = (finishedAt: string): string => {
  if (isUtcIso(finishedAt)) return `${finishedAt.slice(0, 13)}:00:00.000Z`;
  const d = new Date(finishedAt);
  d.setUTCMinutes(0, 0, 0);
  return d.toISOString();
};

/** The UTC day ('YYYY-MM-DD') a record counts in. */
export const dayOf = (finishedAt: string): string =>
  isUtcIso(finishedAt) ? finishedAt.slice(0, 10) : new Date(finishedAt).toISOString().slice(0, 10);

/** One roll-up row's increment, ready for `json_populate_recordset` (sums as decimal strings). */
export interface RollupRow {
  account_id: string;
  /** `hour` (timestamptz) or `day` (date), per resolution. */
  bucket: string;
  key_id: string;
  model: string;
  app: string;
  provider_name: string;
  requests: number;
  tokens_prompt: string;
  tokens_completion: string;
  tokens_cached: string;
  tokens_cache_write: string;
  tokens_reasoning: string;
  cost: string;
  /** Requests that ended with an upstream error (the latency roll-ups count them too). */
  errors: number;
}

interface Acc {
  row: RollupRow;
  tokens: [number, number, number, number, number];
  units: bigint;
}

const TOKEN_FIELDS = [
  'tokens_prompt',
  'tokens_completion',
  'tokens_cached',
  'tokens_cache_write',
  'tokens_reasoning',
] as const;

/** A sum of non-negative safe integers, exact: in doubles while provably exact, else in bigint. */
const exactSum = (sum: number, values: () => Iterable<number>): string => {
  if (sum <= Number.MAX_SAFE_INTEGER) return String(sum);
  let big = 0n;
  for (const v of values()) big += BigInt(v);
  return big.toString();
};

/**
 * Sums records (with their cost in units) into one increment per roll-up row of the given
 * resolution, sorted by primary key (the same lock order in every worker).
 */
export function rollupRows(
  records: readonly { record: RollupRecord; units: bigint }[],
  resolution: 'hour' | 'day',
): RollupRow[] {
  const bucketOf = resolution === 'hour' ? hourOf : dayOf;
  const byRow = new Map<string, Acc & { members: RollupRecord[] }>();
  for (const { record: e, units } of records) {
    const bucket = bucketOf(e.finished_at);
    const app = e.app ?? '';
    // Text fields hold no NUL (the event schema drops it): an unambiguous separator.
    const id = `${e.account_id}\u0000${bucket}\u0000${e.key_id}\u0000${e.model}\u0000${app}\u0000${e.provider_name}`;
    let a = byRow.get(id);
    if (!a) {
      a = {
        row: {
          account_id: e.account_id,
          bucket,
          key_id: e.key_id,
          model: e.model,
          app,
          provider_name: e.provider_name,
          requests: 0,
          tokens_prompt: '0',
          tokens_completion: '0',
          tokens_cached: '0',
          tokens_cache_write: '0',
          tokens_reasoning: '0',
          cost: '0',
          errors: 0,
        },
        tokens: [0, 0, 0, 0, 0],
        units: 0n,
        members: [],
      };
      byRow.set(id, a);
    }
    a.row.requests += 1;
    if (e.error !== null) a.row.errors += 1;
    a.tokens[0] += e.tokens_prompt;
    a.tokens[1] += e.tokens_completion;
    a.tokens[2] += e.tokens_cached;
    a.tokens[3] += e.tokens_cache_write;
    a.tokens[4] += e.tokens_reasoning;
    a.units += units;
    a.members.push(e);
  }
  return [...byRow.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, a]) => {
      TOKEN_FIELDS.forEach((f, i) => {
        a.row[f] = exactSum(a.tokens[i] as number, () => a.members.map((m) => m[f]));
      });
      a.row.cost = toDecimal(a.units);
      return a.row;
    });
}
