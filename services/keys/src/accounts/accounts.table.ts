import type { ColumnType, Generated, Selectable } from 'kysely';

export interface AccountsTable {
  id: Generated<string>;
  /** Lowercase [a-z0-9-] handle used by the admin CLI (`--account acme`). */
  slug: string;
  name: string;
  /** Opt-in bodies for every key of the account (issue 28); off by default. */
  store_bodies: Generated<boolean>;
  created_at: ColumnType<Date, never, never>;
}

export type Account = Selectable<AccountsTable>;
