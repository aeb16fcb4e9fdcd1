import type { ColumnType, Selectable } from 'kysely';
import type { Numeric } from '../generations/generations.table';

/** int8 columns come back from pg as strings; we write numbers or decimal strings. */
type Int8 = ColumnType<string, number | string, number | string>;

/** One row per (account, hour, key, model, app, provider): the analytics roll-up (see the migration). */
export interface UsageHourlyTable {
  account_id: string;
  hour: ColumnType<Date, Date | string, never>;
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

export type UsageHourly = Selectable<UsageHourlyTable>;
