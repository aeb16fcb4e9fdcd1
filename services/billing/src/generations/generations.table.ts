import type { ColumnType, Selectable } from 'kysely';

/** int8 columns come back from pg as strings; we write numbers. */
type Int8 = ColumnType<string, number | string, number | string>;
/** numeric columns: exact decimal strings both ways. */
export type Numeric = ColumnType<string, string, string>;

/** One row per chat completion request, keyed by the request id (idempotency key of the event). */
export interface GenerationsTable {
  id: string;
  account_id: string;
  key_id: string;
  model: string;
  provider_name: string;
  upstream_model: string;
  upstream_id: string | null;
  app: string | null;
  http_referer: ColumnType<string | null, string | null | undefined, string | null>;
  /** The proxy's front door (`chat`, `messages`, …); null: recorded before it existed (chat). */
  api_type: ColumnType<string | null, string | null | undefined, string | null>;
  /** The client's session id (Claude Code's X-Claude-Code-Session-Id). */
  session_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The caller's end-user id (Anthropic `metadata.user_id`). */
  end_user: ColumnType<string | null, string | null | undefined, string | null>;
  /** Hosted tools the request offered that were withheld from the provider (jsonb), null when none. */
  withheld_tools: ColumnType<string[] | null, string | null | undefined, never>;
  streamed: boolean;
  cancelled: boolean;
  finish_reason: string | null;
  tokens_prompt: Int8;
  tokens_completion: Int8;
  tokens_cached: Int8;
  tokens_cache_write: Int8;
  tokens_reasoning: Int8;
  total_cost: Numeric;
  is_byok: boolean;
  usage_source: 'provider' | 'estimated';
  latency_ms: Int8;
  generation_time_ms: Int8;
  /** The time the gateway itself added, in µs (docs/architecture.md "Gateway overhead"); null: not measured. */
  gateway_overhead_us: ColumnType<string | null, number | null | undefined, never>;
  error: ColumnType<{ code: number; message: string } | null, string | null, string | null>;
  /** Provider attempts in order, the serving one last (jsonb). */
  attempts: ColumnType<GenerationAttempt[], string | undefined, never>;
  created_at: ColumnType<Date, Date | string, never>;
  finished_at: ColumnType<Date, Date | string, never>;
  recorded_at: ColumnType<Date, never, never>;
}

interface GenerationAttempt {
  provider: string;
  model: string;
  status: number | null;
  outcome: string;
  latency_ms: number;
}

export type Generation = Selectable<GenerationsTable>;
