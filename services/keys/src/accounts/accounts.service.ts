import { AppError, badRequest, notFound } from '@tollgate/errors';
import type { KeysDb } from '../database';
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
}

export function createAccountService(db: KeysDb): AccountService {
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
  };
}
