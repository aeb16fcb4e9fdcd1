import { type Kysely, sql } from 'kysely';
import { addMonths, createMonthPartition, monthStart } from '../src/generations/partitions';

/**
 * `billing.generations` becomes a table partitioned by month of `created_at` (one partition per UTC
 * month, see src/generations/partitions.ts), so a retention drops whole months instead of deleting
 * rows. The primary key becomes (id, created_at): a partitioned table's unique keys must hold its
 * partition key, and a usage event always carries the same `created_at` (its `started_at`), so a
 * redelivered event still finds its record and is skipped (`on conflict do nothing`).
 *
 * The rows are copied in one statement (tests/…/partition-migration.test.ts times a million), and
 * the secondary indexes are recreated from their own definitions after the copy, so an index
 * another migration added is kept too.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows: indexes } = await sql<{ name: string; def: string }>`
    select indexname as name, indexdef as def from pg_indexes
     where schemaname = 'billing' and tablename = 'generations' and indexname <> 'generations_pkey'`.execute(
    db,
  );
  for (const i of indexes) await sql`drop index ${sql.table(`billing.${i.name}`)}`.execute(db);
  await sql`alter table billing.generations rename to generations_unpartitioned`.execute(db);
  await sql`alter index billing.generations_pkey rename to generations_unpartitioned_pkey`.execute(db);
  await sql`create table billing.generations
    (like billing.generations_unpartitioned including defaults including constraints)
    partition by range (created_at)`.execute(db);

  const { rows } = await sql<{ first: Date | null; last: Date | null }>`
    select min(created_at) as first, max(created_at) as last from billing.generations_unpartitioned`.execute(
    db,
  );
  const now = monthStart(new Date());
  const first = rows[0]?.first ? monthStart(new Date(rows[0].first)) : now;
  const lastData = rows[0]?.last ? monthStart(new Date(rows[0].last)) : now;
  const last = addMonths(new Date(Math.max(lastData.getTime(), now.getTime())), 3);
  for (let m = new Date(Math.min(first.getTime(), now.getTime())); m <= last; m = addMonths(m, 1))
    await createMonthPartition(db, m);

  await sql`insert into billing.generations select * from billing.generations_unpartitioned`.execute(db);
  await sql`alter table billing.generations add primary key (id, created_at)`.execute(db);
  for (const i of indexes) await sql.raw(i.def).execute(db);
  await sql`drop table billing.generations_unpartitioned`.execute(db);
}

/** Back to one table (every partition's rows copied into it). */
export async function down(db: Kysely<unknown>): Promise<void> {
  const { rows: indexes } = await sql<{ name: string; def: string }>`
    select indexname as name, indexdef as def from pg_indexes
     where schemaname = 'billing' and tablename = 'generations' and indexname <> 'generations_pkey'`.execute(
    db,
  );
  await sql`alter table billing.generations rename to generations_partitioned`.execute(db);
  await sql`alter index billing.generations_pkey rename to generations_partitioned_pkey`.execute(db);
  for (const i of indexes) {
    await sql`alter index ${sql.table(`billing.${i.name}`)} rename to ${sql.raw(`${i.name}_partitioned`)}`.execute(
      db,
    );
  }
  await sql`create table billing.generations
    (like billing.generations_partitioned including defaults including constraints)`.execute(db);
  await sql`insert into billing.generations select * from billing.generations_partitioned`.execute(db);
  await sql`alter table billing.generations add primary key (id)`.execute(db);
  for (const i of indexes) await sql.raw(i.def).execute(db);
  await sql`drop table billing.generations_partitioned`.execute(db);
}
