import { createTestDatabase } from '@tollgate/testkit';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDb, migrateToLatest } from './index';

describe('migrateToLatest', () => {
  it('creates a missing database, then the schema, and is idempotent when raced', async () => {
    const probe = await createTestDatabase();
    await probe.drop(); // keep the unique name, but the database no longer exists
    const dbs = [createDb(probe.url), createDb(probe.url)];
    const migrations = {
      '0001_t': {
        up: async (db: Kysely<unknown>) => {
          await db.schema.createTable('probe.t').addColumn('id', 'integer').execute();
        },
      },
    };
    try {
      const results = await Promise.all(dbs.map((db) => migrateToLatest(db, 'probe', migrations)));
      expect(results.flatMap((r) => r.applied)).toEqual(['0001_t']);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from probe.t`.execute(dbs[0]!);
      expect(rows[0]?.n).toBe(0);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
      await probe.drop();
    }
  });
});

describe('createDb under a lost connection', () => {
  it('survives Postgres going away in the middle of a transaction, and works again when it is back', async () => {
    const { createTcpProxy, hostPortOf } = await import('@tollgate/testkit');
    const test = await createTestDatabase();
    const hop = await createTcpProxy(hostPortOf(test.url, 5432));
    const db = createDb<unknown>(hop.url(test.url), { max: 2 });
    try {
      const failed = await db
        .transaction()
        .execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await hop.stop(); // the socket dies while the client is checked out, between two queries
          await new Promise((r) => setTimeout(r, 200)); // an unhandled 'error' would crash here
          await sql`select 2`.execute(trx);
        })
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect(failed).toBeInstanceOf(Error);
      await hop.start();
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await db.destroy();
      await hop.close();
      await test.drop();
    }
  });
});
