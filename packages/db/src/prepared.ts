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
 *
 * The mark goes first in a raw statement, or last in a query-builder one (`.modifyEnd(prepared(…))`,
 * whose text kysely renders the same way every time for the same calls).
 */
const FIRST = /^\s*\/\* prepared: ([a-z][a-z0-9_]{0,62}) \*\//;
const LAST = /\/\* prepared: ([a-z][a-z0-9_]{0,62}) \*\/\s*$/;

/** The name a statement's text is marked with, if any (the end is searched only when it is a comment's). */
function markOf(text: string): string | undefined {
  const first = FIRST.exec(text)?.[1];
  if (first !== undefined || !text.trimEnd().endsWith('*/')) return first;
  return LAST.exec(text.slice(-100))?.[1];
}

/**
 * The mark of a fixed-text statement: first in a raw one (`sql\`${prepared('name')} select …\``) or
 * last in a query builder's (`db.selectFrom(…)….modifyEnd(prepared('name'))`).
 */
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
      const name = markOf(config);
      if (name !== undefined && (texts.get(name) ?? config) === config) {
        texts.set(name, config);
        return query.call(this, { name, text: config, values }, callback);
      }
    }
    return query.call(this, config, values, callback);
  };
  (client as unknown as { query: Query }).query = named;
}
