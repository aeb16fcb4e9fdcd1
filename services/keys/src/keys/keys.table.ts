import type { KeyScope } from '@tollgate/auth';
import type { LimitReset } from '@tollgate/money';
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface ApiKeysTable {
  /** The spec's `hash`: the key id. */
  id: Generated<string>;
  account_id: string;
  name: string;
  label: string;
  scope: KeyScope;
  /** SHA-256 hex of the plaintext key; the plaintext is never stored. */
  digest: string;
  /** USD as a numeric decimal string; null = no limit. */
  limit: string | null;
  limit_reset: LimitReset | null;
  disabled: Generated<boolean>;
  revoked: Generated<boolean>;
  /** The instant the key stops authenticating; null = never. */
  expires_at: Date | null;
  /** OpenRouter's flag, stored and reported; no effect (Tollgate has no BYOK yet). */
  include_byok_in_limit: Generated<boolean>;
  /** Model ids or `vendor/*` patterns the key may call; empty = every model. */
  allowed_models: ColumnType<string[], string[] | undefined, string[]>;
  /** The key's team (a team of the same account); null = none. */
  team_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Requests per minute; null = no per-key rate limit. */
  rate_limit_rpm: number | null;
  /** Tokens per minute (worst case at admission); null = none. */
  rate_limit_tpm: ColumnType<number | null, number | null | undefined, number | null>;
  /** Opt-in bodies (issue 28): the prompt and answer of its requests are kept. */
  store_bodies: Generated<boolean>;
  /** Bumped by every change; the key cache compares it (CAS). */
  version: Generated<number>;
  last_used_at: ColumnType<Date | null, never, Date | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export type ApiKey = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
export type ApiKeyUpdate = Updateable<ApiKeysTable>;
