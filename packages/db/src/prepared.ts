import { type RawBuilder, sql } from 'kysely';
import type pg from 'pg';

/**
 * Server-side prepared statements for hot queries whose text never changes (issue 30).
 *
 * kysely sends every query unnamed, so Postgres parses and plans it on every execution. For a big
 * statement that is most of its cost: billing's batch statement (eleven data-modifying CTEs) took
 * 2.2 ms to parse and 5.8 ms to plan (`bind`) against 1.6 ms to execute, per batch, at 500 req/s
 * (log_min_duration_statement, bench/README.md). A statement whose text starts with
 * `prepared(name)` goes to Postgres as a named statement instead: parsed once per connection and,
 * once Postgres's plan cache finds its generic plan no worse than the custom ones (after five
 * executions, `plan_cache_mode = auto`), planned once per connection too. Only marked statements
 * are named, so dynamic SQL (an `in` list of varying length) never piles up prepared statements.
 */
const MARK = /^\s*\/\* prepared: ([a-z][a-z0-9_]{0,62}) \*\//;

/** The mark to put first in a fixed-text statement: `sql\`${prepared('name')} select …\``. */
export function prepared(name: string): RawBuilder<unknown> {
  if (!/^[a-z][a-z0-9_]{0,62}$/.test(name)) throw new Error(`prepared statement name ${name}: a-z, 0-9, _`);
  return sql.raw(`/* prepared: ${name} */ `);
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * Makes `client` send statements marked with `prepared(name)` as named statements. A name whose
 * text differs from the one this connection prepared under it (a programming error: the text is
 * meant to be fixed) goes unnamed rather than failing the query.
 */
export function namePreparedStatements(client: pg.ClientBase): void {
  const query = client.query as unknown as Query;
  const texts = new Map<string, string>();
  const named: Query = function (this: unknown, config, values, callback) {
    if (typeof config === 'string' && Array.isArray(values)) {
      const name = MARK.exec(config)?.[1];
      if (name !== undefined && (texts.get(name) ?? config) === config) {
        texts.set(name, config);
        return query.call(this, { name, text: config, values }, callback);
      }
    }
    return query.call(this, config, values, callback);
  };
  (client as unknown as { query: Query }).query = named;
}
