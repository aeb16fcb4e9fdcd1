import type { Kysely } from 'kysely';
import type { Database } from '../database';
import type { NewGeneration } from './generations.table';

type Db = Kysely<Database>;

/** Multi-row insert; rows whose id is already recorded are skipped. Returns the ids inserted now. */
export async function insertGenerations(trx: Db, rows: NewGeneration[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await trx
    .insertInto('billing.generations')
    .values(rows)
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .execute();
  return inserted.map((r) => r.id);
}

export async function findGeneration(db: Db, id: string) {
  return db.selectFrom('billing.generations').selectAll().where('id', '=', id).executeTakeFirst();
}
