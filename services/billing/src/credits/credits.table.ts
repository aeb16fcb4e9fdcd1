import type { ColumnType, Generated } from 'kysely';
import type { Numeric } from '../generations/generations.table';

/** Append-only: every credit grant (or correction, negative) with an operator note. */
export interface CreditLedgerTable {
  id: Generated<string>;
  account_id: string;
  amount: Numeric;
  note: string | null;
  created_at: ColumnType<Date, never, never>;
}

/** Per-account billing settings; `version` bumps on every credits or postpaid change (Redis CAS). */
export interface AccountSettingsTable {
  account_id: string;
  postpaid: ColumnType<boolean, boolean | undefined, boolean>;
  version: ColumnType<string, number | string | undefined, number | string>;
  updated_at: ColumnType<Date, never, Date | string>;
}
