import { AppError, badRequest, notFound } from '@tollgate/errors';
import { sql } from 'kysely';
import { ADMIN_CLI_ACTOR, type AuditActor, recordChange } from '../audit/audit';
import { applyKeysChange, type KeyChangeDeps } from '../cache/key-cache-sync';
import { findAccountById, findAccountBySlug, insertAccount, listAccounts } from './accounts.repository';
import type { Account } from './accounts.table';

const SLUG_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function validateSlug(slug: string): string {
  if (!SLUG_PATTERN.test(slug) || slug.length > 64) {
    throw badRequest(
      `slug: must be 1-64 lowercase letters, digits or inner hyphens (e.g. "acme" or "acme-labs"), got "${slug}"`,
    );
  }
  return slug;
}

export interface AccountService {
  create(input: { slug: string; name: string }): Promise<Account>;
  list(): Promise<Account[]>;
  /** The account with this slug, or 404 naming it. */
  requireBySlug(slug: string): Promise<Account>;
  /** The account with this id, or 404. */
  requireById(id: string): Promise<Account>;
  /**
   * Changes the account's settings (`storeBodies`: opt-in bodies for every key, issue 28), audited as
   * `account.update` in the change's transaction (`actor` omitted = the admin CLI). A change reaches
   * the key-cache record of every key of the account before this resolves (the proxy decides at the
   * next request, with no extra read). Unchanged settings: nothing is written.
   */
  update(id: string, input: { storeBodies?: boolean }, actor?: AuditActor): Promise<Account>;
}

const settingsSnapshot = (a: Account) => ({ store_bodies: a.store_bodies });

export function createAccountService(deps: KeyChangeDeps): AccountService {
  const { db } = deps;
  return {
    async create({ slug, name }) {
      validateSlug(slug);
      const trimmed = name.trim();
      if (!trimmed || trimmed.length > 200 || trimmed.includes('\u0000')) {
        throw badRequest('name: must be 1-200 characters (no NUL)');
      }
      try {
        return await insertAccount(db, { slug, name: trimmed });
      } catch (err) {
        if ((err as { code?: string }).code === '23505') {
          throw new AppError('conflict', `An account with slug "${slug}" already exists`, { slug });
        }
        throw err;
      }
    },
    list: () => listAccounts(db),
    async requireBySlug(slug) {
      const account = await findAccountBySlug(db, slug);
      if (!account) throw notFound(`No account with slug "${slug}"`, { slug });
      return account;
    },
    async requireById(id) {
      const account = await findAccountById(db, id);
      if (!account) throw notFound('No such account');
      return account;
    },
    update(id, input, actor = ADMIN_CLI_ACTOR) {
      return applyKeysChange(deps, async (trx) => {
        const current = await trx
          .selectFrom('keys.accounts')
          .selectAll()
          .where('id', '=', id)
          .forUpdate()
          .executeTakeFirst();
        if (!current) throw notFound('No such account');
        if (input.storeBodies === undefined || input.storeBodies === current.store_bodies)
          return { result: current, keys: [] };
        const updated = await trx
          .updateTable('keys.accounts')
          .set({ store_bodies: input.storeBodies })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        await recordChange(trx, actor, {
          accountId: id,
          action: 'account.update',
          target: { kind: 'account', id },
          before: settingsSnapshot(current),
          after: settingsSnapshot(updated),
        });
        // Every key that can still authenticate gets a new version: its cached record changes.
        const keys = await trx
          .updateTable('keys.api_keys')
          .set({ version: sql<number>`version + 1` })
          .where('account_id', '=', id)
          .where('revoked', '=', false)
          .returningAll()
          .execute();
        return { result: updated, keys };
      });
    },
  };
}
