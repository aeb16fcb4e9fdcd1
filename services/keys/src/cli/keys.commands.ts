import { badRequest, notFound } from '@tollgate/errors';
import type { KeyObject } from '../keys/key-view';
import { parseHash } from '../keys/keys.schemas';
import type { KeysRuntime } from '../runtime';
import { type CommandGroup, defineCommand } from './command';

const columns = ['hash', 'name', 'label', 'state', 'last_used_at', 'created_at'];
const state = (k: KeyObject) => (k.revoked ? 'revoked' : k.disabled ? 'disabled' : 'active');
const row = (k: KeyObject) => [k.hash, k.name, k.label, state(k), k.last_used_at, k.created_at];

const keyOptions = {
  account: { type: 'string', required: true, description: 'account slug' },
  hash: { type: 'string', required: true, description: 'key id (uuid)' },
} as const;

/** The management key `hash` of the account `slug`; anything else (inference key, other account) is 404. */
async function managementKey(runtime: KeysRuntime, slug: string, rawHash: string) {
  const hash = parseHash(rawHash);
  const account = await runtime.accounts.requireBySlug(slug);
  const existing = await runtime.keys.get(account.id, hash);
  if (existing.scope !== 'management') throw notFound(`No management key ${hash} in account "${slug}"`);
  return { account, hash };
}

/** Disabling is reversible; re-enabling from here is the way back for a key that disabled itself. */
const setDisabled = (disabled: boolean) =>
  defineCommand({
    name: disabled ? 'disable-management' : 'enable-management',
    summary: disabled
      ? 'Disable a management key (reversible; it gets 401 until enabled)'
      : 'Enable a disabled management key (e.g. one that disabled itself through the API)',
    options: keyOptions,
    async run({ runtime }, o) {
      const { account, hash } = await managementKey(runtime, o.account, o.hash);
      const updated = await runtime.keys.update(account.id, hash, { disabled });
      const [object] = await runtime.presenter.present([updated], 'zero');
      return { data: object, text: `${disabled ? 'disabled' : 'enabled'} ${updated.id}` };
    },
  });

/** Management keys exist only through here (spec §5.4: never through the API). */
export const keysCommands: CommandGroup = {
  name: 'keys',
  summary: 'Management keys (inference keys are managed through the API with a management key)',
  commands: [
    defineCommand({
      name: 'create-management',
      summary: 'Create a management key; the plaintext key is printed once',
      options: {
        account: { type: 'string', required: true, description: 'account slug' },
        name: { type: 'string', required: true, description: 'display name of the key' },
      },
      async run({ runtime }, o) {
        const account = await runtime.accounts.requireBySlug(o.account);
        const name = o.name.trim();
        if (!name || name.length > 200) throw badRequest('name: must be 1-200 characters');
        const { row: created, key } = await runtime.keys.create(account.id, { name, scope: 'management' });
        const [object] = await runtime.presenter.present([created], 'zero');
        return {
          data: { ...object, key },
          text: `${row(object!).join('  ')}\n\nkey: ${key}\nStore it now: it is shown only once.`,
        };
      },
    }),
    defineCommand({
      name: 'list-management',
      summary: "List an account's management keys (revoked ones included)",
      options: { account: { type: 'string', required: true, description: 'account slug' } },
      async run({ runtime }, o) {
        const account = await runtime.accounts.requireBySlug(o.account);
        const objects: KeyObject[] = [];
        for (let offset = 0; ; ) {
          const page = await runtime.keys.list(account.id, {
            includeRevoked: true,
            scope: 'management',
            offset,
          });
          objects.push(...(await runtime.presenter.present(page, 'zero')));
          if (page.length < 100) break;
          offset += page.length;
        }
        return { data: objects, table: { columns, rows: objects.map(row) } };
      },
    }),
    defineCommand({
      name: 'revoke-management',
      summary: 'Revoke a management key (permanent; the only way a management key can be revoked)',
      options: keyOptions,
      async run({ runtime }, o) {
        const { account, hash } = await managementKey(runtime, o.account, o.hash);
        const revoked = await runtime.keys.revoke(account.id, hash);
        return { data: { hash: revoked.id, deleted: true }, text: `revoked ${revoked.id}` };
      },
    }),
    setDisabled(true),
    setDisabled(false),
  ],
};
