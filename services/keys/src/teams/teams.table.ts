import type { ColumnType, Generated, Selectable } from 'kysely';

/** A team inside an account (issue 29): a name; keys point at it (`api_keys.team_id`). */
export interface TeamsTable {
  id: Generated<string>;
  account_id: string;
  name: string;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export type Team = Selectable<TeamsTable>;
