import type { Account } from '../accounts/accounts.table';
import { ADMIN_CLI_ACTOR } from '../audit/audit';
import { type CommandGroup, defineCommand } from './command';

const accountJson = (a: Account) => ({
  id: a.id,
  slug: a.slug,
  name: a.name,
  created_at: a.created_at.toISOString(),
});
const columns = ['id', 'slug', 'name', 'created_at'];
const row = (a: Account) => [a.id, a.slug, a.name, a.created_at.toISOString()];

export const accountsCommands: CommandGroup = {
  name: 'accounts',
  summary: 'Accounts (tenants owning keys, credits and usage)',
  commands: [
    defineCommand({
      name: 'create',
      summary: 'Create an account',
      options: {
        slug: { type: 'string', required: true, description: 'lowercase handle [a-z0-9-], e.g. acme' },
        name: { type: 'string', required: true, description: 'display name' },
      },
      async run({ runtime }, o) {
        const account = await runtime.accounts.create({ slug: o.slug, name: o.name });
        return { data: accountJson(account), table: { columns, rows: [row(account)] } };
      },
    }),
    defineCommand({
      name: 'list',
      summary: 'List accounts',
      options: {},
      async run({ runtime }) {
        const accounts = await runtime.accounts.list();
        return { data: accounts.map(accountJson), table: { columns, rows: accounts.map(row) } };
      },
    }),
    defineCommand({
      name: 'set-bodies',
      summary:
        "Keep every key's request and response bodies on its generation records (opt-in, issue 28); --off stops it",
      options: {
        account: { type: 'string', required: true, description: 'account slug, e.g. acme' },
        off: {
          type: 'boolean',
          description: 'stop keeping bodies (keys with their own store_bodies keep theirs)',
        },
      },
      async run({ runtime }, o) {
        const account = await runtime.accounts.requireBySlug(o.account);
        // As PATCH /account: audited (actor: the admin CLI), every live key's cached record rewritten.
        const updated = await runtime.accounts.update(account.id, { storeBodies: !o.off }, ADMIN_CLI_ACTOR);
        return {
          data: { account: updated.slug, account_id: updated.id, store_bodies: updated.store_bodies },
          text: `${updated.slug}: bodies are ${updated.store_bodies ? 'kept for every key' : 'kept only for keys that ask'}`,
        };
      },
    }),
  ],
};
