import type { LimitReset } from '@tollgate/money';
import type { ColumnType, Generated, Selectable } from 'kysely';

/**
 * A team inside an account (issue 29): a name, an optional USD spend limit with its reset period and
 * an optional tokens-per-minute limit, shared by the keys that point at it (`api_keys.team_id`).
 */
export interface TeamsTable {
  id: Generated<string>;
  account_id: string;
  name: string;
  /** USD as a numeric decimal string; null = no limit. */
  limit: ColumnType<string | null, string | null | undefined, string | null>;
  /** null = the limit never resets. */
  limit_reset: ColumnType<LimitReset | null, LimitReset | null | undefined, LimitReset | null>;
  /** Tokens per minute across the team's keys (worst case at admission, corrected at settle); null = none. */
  rate_limit_tpm: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export type Team = Selectable<TeamsTable>;
