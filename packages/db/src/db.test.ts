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
