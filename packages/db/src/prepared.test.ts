import { createTestDatabase } from '@tollgate/testkit';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, prepared } from './index';

describe('prepared(name): fixed-text statements as named prepared statements', () => {
  let test: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Kysely<unknown>;
  beforeAll(async () => {
    test = await createTestDatabase();
    db = createDb<unknown>(test.url, { max: 1 });
  });
  afterAll(async () => {
    await db?.destroy();
    await test?.drop();
  });

  const preparedOnConnection = async () =>
    (
      await sql<{
        name: string;
        statement: string;
      }>`select name, statement from pg_prepared_statements order by name`.execute(db)
    ).rows;

  it('prepares a marked statement once per connection, reuses it with new parameters, and names nothing else', async () => {
    const double = (n: number) =>
      sql<{ v: number }>`${prepared('t_double')} select ${n}::int * 2 as v`.execute(db);
    expect((await double(2)).rows).toEqual([{ v: 4 }]);
    expect((await double(21)).rows).toEqual([{ v: 42 }]);
    await sql`select ${1}::int as unmarked`.execute(db);
    await sql`
      ${prepared('t_indented')} select 1 as v`.execute(db);
    const statements = await preparedOnConnection();
    expect(statements.map((s) => s.name)).toEqual(['t_double', 't_indented']);
    expect(statements[0]?.statement).toContain('select $1::int * 2 as v');
  });

  it('takes the mark last in a query-builder statement (modifyEnd), not a mark inside the text', async () => {
    const next = (n: number) =>
      db.selectNoFrom(sql<number>`${n}::int + 1`.as('v')).modifyEnd(prepared('t_builder')).execute();
    expect(await next(1)).toEqual([{ v: 2 }]);
    expect(await next(41)).toEqual([{ v: 42 }]);
    // A mark in the middle (a comment inside a query, say) names nothing.
    await sql`select ${1}::int as v /* prepared: t_middle */ , 2 as w`.execute(db);
    const statements = await preparedOnConnection();
    expect(statements.map((s) => s.name)).toEqual(['t_builder', 't_double', 't_indented']);
    expect(statements[0]?.statement).toMatch(
      /^select \$1::int \+ 1 as "v" \/\* prepared: t_builder \*\/\s*$/,
    );
  });

  it('sends a second text under a name already prepared unnamed instead of failing', async () => {
    const other = await sql<{ v: number }>`${prepared('t_double')} select ${5}::int * 3 as v`.execute(db);
    expect(other.rows).toEqual([{ v: 15 }]);
    expect((await preparedOnConnection()).map((s) => s.name)).toEqual([
      't_builder',
      't_double',
      't_indented',
    ]);
  });

  it('a marked statement that fails leaves the connection and the statement usable', async () => {
    const divide = (n: number) =>
      sql<{ v: number }>`${prepared('t_divide')} select 10 / ${n}::int as v`.execute(db);
    await expect(divide(0)).rejects.toThrow(/division by zero/);
    expect((await divide(2)).rows).toEqual([{ v: 5 }]);
  });

  it('rejects a name Postgres would not take as written', () => {
    expect(() => prepared('Bad-Name')).toThrow(/a-z, 0-9, _/);
  });
});
