import type { Numeric } from '../generations/generations.table';

/** Spend per key per period (`d2026-11-20`, `w2026-W47`, `m2026-11`, `all`), the truth behind Redis. */
export interface KeySpendTable {
  key_id: string;
  account_id: string;
  period: string;
  amount: Numeric;
}

/** Spend per team per period (issue 29), from the usage events' `team_id`; like `KeySpendTable`. */
export interface TeamSpendTable {
  team_id: string;
  account_id: string;
  period: string;
  amount: Numeric;
}

/** All-time spend per account (compared with the credit total). */
export interface AccountUsageTable {
  account_id: string;
  amount: Numeric;
}
