import { prepared } from '@tollgate/db';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../database';
import { requestIdSecond } from './partitions';

type Db = Kysely<Database>;

/**
 * A generation record as the worker writes it, keyed by column (`error` and `attempts` are JSON
 * values, timestamps ISO strings, `total_cost` a decimal string).
 */
export interface GenerationRow {
  id: string;
  account_id: string;
  key_id: string;
  model: string;
  provider_name: string;
  upstream_model: string;
  upstream_id: string | null;
  app: string | null;
  http_referer: string | null;
  api_type: string | null;
  session_id: string | null;
  end_user: string | null;
  withheld_tools: string[] | null;
  streamed: boolean;
  cancelled: boolean;
  finish_reason: string | null;
  tokens_prompt: number;
  tokens_completion: number;
  tokens_cached: number;
  tokens_cache_write: number;
  tokens_reasoning: number;
  total_cost: string;
  is_byok: boolean;
  usage_source: 'provider' | 'estimated';
  latency_ms: number;
  generation_time_ms: number;
  /** The time the gateway itself added (µs); null when the usage event did not carry it. */
  gateway_overhead_us: number | null;
  error: { code: number; message: string } | null;
  attempts: unknown[];
  created_at: string;
  finished_at: string;
}

const QUOTE = /["\\]/;
const QUOTES = /["\\]/g;

/**
 * A Postgres array literal (`{"a","b",NULL}`) of the rows' values of one column: every element
 * quoted, `"` and `\` escaped, null as NULL. Built by hand: pg's own array serialiser escapes
 * every element with two regexes and a recursive call.
 */
function arrayLiteral<R>(rows: readonly R[], get: (r: R) => string | null): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    const v = get(rows[i] as R);
    out += v === null ? 'NULL' : `"${QUOTE.test(v) ? v.replace(QUOTES, '\\$&') : v}"`;
  }
  return `${out}}`;
}

/** Integers and booleans need no quoting. */
function plainLiteral<R>(rows: readonly R[], get: (r: R) => number | boolean): string {
  let out = '{';
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out += ',';
    const v = get(rows[i] as R);
    out += typeof v === 'boolean' ? (v ? 't' : 'f') : String(v);
  }
  return `${out}}`;
}

/**
 * Inserts the rows with ONE statement of one array parameter per column, zipped by `unnest`: no
 * per-row bind parameters to build, send and parse, and Postgres parses typed arrays about three
 * times faster than the same rows as JSON (`json_populate_recordset`). Rows whose id is already
 * recorded are skipped (`on conflict do nothing`). Returns the ids inserted now.
 */
export async function insertGenerations(trx: Db, rows: readonly GenerationRow[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const text = (get: (r: GenerationRow) => string | null) => arrayLiteral(rows, get);
  const plain = (get: (r: GenerationRow) => number | boolean) => plainLiteral(rows, get);
  const { rows: inserted } = await sql<{ id: string }>`${prepared('billing_insert_generations')}
    insert into billing.generations (
      id, account_id, key_id, model, provider_name, upstream_model, upstream_id, app, http_referer,
      api_type, session_id, end_user, withheld_tools, streamed, cancelled, finish_reason, tokens_prompt, tokens_completion, tokens_cached,
      tokens_cache_write, tokens_reasoning, total_cost, is_byok, usage_source, latency_ms,
      generation_time_ms, gateway_overhead_us, error, attempts, created_at, finished_at)
    select * from unnest(
      ${text((r) => r.id)}::text[],
      ${text((r) => r.account_id)}::uuid[],
      ${text((r) => r.key_id)}::uuid[],
      ${text((r) => r.model)}::text[],
      ${text((r) => r.provider_name)}::text[],
      ${text((r) => r.upstream_model)}::text[],
      ${text((r) => r.upstream_id)}::text[],
      ${text((r) => r.app)}::text[],
      ${text((r) => r.http_referer)}::text[],
      ${text((r) => r.api_type)}::text[],
      ${text((r) => r.session_id)}::text[],
      ${text((r) => r.end_user)}::text[],
      ${text((r) => (r.withheld_tools === null ? null : JSON.stringify(r.withheld_tools)))}::jsonb[],
      ${plain((r) => r.streamed)}::bool[],
      ${plain((r) => r.cancelled)}::bool[],
      ${text((r) => r.finish_reason)}::text[],
      ${plain((r) => r.tokens_prompt)}::int8[],
      ${plain((r) => r.tokens_completion)}::int8[],
      ${plain((r) => r.tokens_cached)}::int8[],
      ${plain((r) => r.tokens_cache_write)}::int8[],
      ${plain((r) => r.tokens_reasoning)}::int8[],
      ${text((r) => r.total_cost)}::numeric[],
      ${plain((r) => r.is_byok)}::bool[],
      ${text((r) => r.usage_source)}::text[],
      ${plain((r) => r.latency_ms)}::int8[],
      ${plain((r) => r.generation_time_ms)}::int8[],
      ${text((r) => (r.gateway_overhead_us === null ? null : String(r.gateway_overhead_us)))}::int8[],
      ${text((r) => (r.error === null ? null : JSON.stringify(r.error)))}::jsonb[],
      ${text((r) => JSON.stringify(r.attempts))}::jsonb[],
      ${text((r) => r.created_at)}::timestamptz[],
      ${text((r) => r.finished_at)}::timestamptz[])
    on conflict (id, created_at) do nothing
    returning id`.execute(trx);
  return inserted.map((r) => r.id);
}

/** How far a record's `created_at` (its request's start) may be from its id's second. */
const ID_CREATED_SLACK_S = 86_400;

/**
 * One record by id. The id's second (`gen-<unix s>-…`, minted when the request arrived) bounds its
 * `created_at` (the request's start), so the first read touches only the month partitions around
 * it, not every month's index; a miss there (an id minted elsewhere) reads every month. The first
 * read (every `GET /generation`) is prepared once per connection.
 */
export async function findGeneration(db: Db, id: string) {
  const byId = db.selectFrom('billing.generations').selectAll().where('id', '=', id);
  const second = requestIdSecond(id);
  if (second === null || second > 1e11) return byId.executeTakeFirst();
  const near = await byId
    .where('created_at', '>=', new Date((second - ID_CREATED_SLACK_S) * 1000))
    .where('created_at', '<', new Date((second + ID_CREATED_SLACK_S) * 1000))
    .modifyEnd(prepared('billing_generation_near_id'))
    .executeTakeFirst();
  return near ?? byId.executeTakeFirst();
}

/** The 404 message for an id with no record: past the retention, or not (yet) recorded. */
export function missingGenerationMessage(id: string, cutoff: Date | null): string {
  const second = requestIdSecond(id);
  if (cutoff !== null && second !== null && second * 1000 < cutoff.getTime()) {
    return `No generation with id ${id}: it is older than the retention of generation records (GENERATION_RETENTION_DAYS), which have been deleted; its cost stays in the usage totals`;
  }
  return `No generation with id ${id} (it may not be recorded yet)`;
}

export interface GenerationFilters {
  model?: string;
  /** X-Title; '' means "requests without one". */
  app?: string;
  keyId?: string;
  provider?: string;
  usageSource?: 'provider' | 'estimated';
  /** One client session (served by the (account_id, session_id, created_at) index). */
  sessionId?: string;
  modelPrefix?: string;
  appPrefix?: string;
  idPrefix?: string;
  /** created_at in [from, to). */
  from?: Date;
  to?: Date;
}

export type GenerationSort = 'created_at' | 'cost' | 'tokens' | 'latency';

/** A LIKE pattern matching values that start with `prefix` (its % _ and \ taken literally). */
const startsWith = (prefix: string) => `${prefix.replace(/[\\%_]/g, '\\$&')}%`;

const SORT_COLUMN = {
  created_at: sql.ref('created_at'),
  cost: sql.ref('total_cost'),
  tokens: sql`(tokens_prompt + tokens_completion)`,
  latency: sql.ref('latency_ms'),
} as const;

/**
 * One account's records, `limit` at a time. Newest first by default, with keyset pages: `before` is
 * the id of the last row of the previous page (served by the (account_id, created_at) index). Any
 * other order pages by `offset` (bounded by the contract); ties are broken by (created_at, id) so
 * pages never overlap. Never a range aggregate (analytics reads the roll-ups).
 */
export async function listGenerations(
  db: Db,
  q: {
    accountId: string;
    limit: number;
    /** The id of the last row of the previous page (default order only). */
    before?: string;
    offset?: number;
    sort?: GenerationSort;
    order?: 'asc' | 'desc';
    filters?: GenerationFilters;
  },
) {
  const f = q.filters ?? {};
  let query = db.selectFrom('billing.generations').selectAll().where('account_id', '=', q.accountId);
  if (f.model) query = query.where('model', '=', f.model);
  if (f.app !== undefined)
    query = f.app === '' ? query.where('app', 'is', null) : query.where('app', '=', f.app);
  if (f.keyId) query = query.where('key_id', '=', f.keyId);
  if (f.provider) query = query.where('provider_name', '=', f.provider);
  if (f.usageSource) query = query.where('usage_source', '=', f.usageSource);
  if (f.sessionId) query = query.where('session_id', '=', f.sessionId);
  if (f.modelPrefix) query = query.where(sql<boolean>`model like ${startsWith(f.modelPrefix)}`);
  if (f.appPrefix) query = query.where(sql<boolean>`app like ${startsWith(f.appPrefix)}`);
  if (f.idPrefix) query = query.where(sql<boolean>`id like ${startsWith(f.idPrefix)}`);
  if (f.from) query = query.where('created_at', '>=', f.from);
  if (f.to) query = query.where('created_at', '<', f.to);
  if (q.before) {
    // Compared in Postgres (microsecond timestamps survive; a JS Date would not keep them).
    query = query.where(
      sql<boolean>`(created_at, id) < (select p.created_at, p.id from billing.generations p where p.id = ${q.before} and p.account_id = ${q.accountId})`,
    );
  }
  const order = q.order ?? 'desc';
  const dir = order === 'asc' ? sql`asc` : sql`desc`;
  if (q.sort && q.sort !== 'created_at') query = query.orderBy(sql`${SORT_COLUMN[q.sort]} ${dir}`);
  query = query.orderBy('created_at', order).orderBy('id', order);
  if (q.offset) query = query.offset(q.offset);
  return query.limit(q.limit).execute();
}

export interface SessionRow {
  session_id: string;
  requests: string;
  cost: string;
  tokens_prompt: string;
  tokens_completion: string;
  first_at: Date;
  last_at: Date;
  models: string[];
}

/**
 * One account's sessions (records with a client session id) whose requests fall in [from, to): totals
 * per session, the most recently active first, `limit` from `offset`.
 */
export async function listSessions(
  db: Db,
  q: { accountId: string; from?: Date; to?: Date; limit: number; offset: number },
): Promise<SessionRow[]> {
  const { rows } = await sql<SessionRow>`
    select session_id, count(*)::text as requests, sum(total_cost)::text as cost,
      sum(tokens_prompt)::text as tokens_prompt, sum(tokens_completion)::text as tokens_completion,
      min(created_at) as first_at, max(created_at) as last_at,
      (array_agg(distinct model order by model))[1:5] as models
    from billing.generations
    where account_id = ${q.accountId} and session_id is not null
      ${q.from ? sql`and created_at >= ${q.from}` : sql``}
      ${q.to ? sql`and created_at < ${q.to}` : sql``}
    group by session_id
    order by max(created_at) desc, session_id
    limit ${q.limit} offset ${q.offset}`.execute(db);
  return rows;
}
