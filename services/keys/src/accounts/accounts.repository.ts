import type { Kysely } from 'kysely';
import type { Database } from '../database';
import type { Account } from './accounts.table';

type Db = Kysely<Database>;

export async function insertAccount(db: Db, input: { slug: string; name: string }): Promise<Account> {
  return db.insertInto('keys.accounts').values(input).returningAll().executeTakeFirstOrThrow();
}

export async function findAccountBySlug(db: Db, slug: string): Promise<Account | undefined> {
  return db.selectFrom('keys.accounts').selectAll().where('slug', '=', slug).executeTakeFirst();
}

export async function findAccountById(db: Db, id: string): Promise<Account | undefined> {
  return db.selectFrom('keys.accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listAccounts(db: Db): Promise<Account[]> {
  return db
    .selectFrom('keys.accounts')
    .selectAll()
    .orderBy('created_at', 'asc')
    .orderBy('slug', 'asc')
    .execute();
}
