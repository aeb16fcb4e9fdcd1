import type { ColumnType } from 'kysely';
import type { Numeric } from '../generations/generations.table';

/** int8 columns come back from pg as strings; we write numbers or decimal strings. */
type Int8 = ColumnType<string, number | string, number | string>;

interface RollupColumns {
  account_id: string;
  key_id: string;
  model: string;
  /** X-Title, '' when the request had none. */
  app: string;
  provider_name: string;
  requests: Int8;
  tokens_prompt: Int8;
  tokens_completion: Int8;
  tokens_cached: Int8;
  tokens_cache_write: Int8;
  tokens_reasoning: Int8;
  cost: Numeric;
}

/** One row per (account, UTC hour, key, model, app, provider): the analytics roll-up (see the migration). */
export interface UsageHourlyTable extends RollupColumns {
  hour: ColumnType<Date, Date | string, never>;
}

/** The same sums per UTC day (`day` is a `date`, read back as 'YYYY-MM-DD'). */
export interface UsageDailyTable extends RollupColumns {
  day: ColumnType<string, string, never>;
}
