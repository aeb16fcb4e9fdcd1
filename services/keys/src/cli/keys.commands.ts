import { createKeyBody, updateKeyBody } from '@tollgate/contracts';
import { badRequest, notFound } from '@tollgate/errors';
import { parseId } from '@tollgate/http';
import { ADMIN_CLI_ACTOR } from '../audit/audit';
import type { KeyObject } from '../keys/key-view';
import { governanceOf } from '../keys/keys.schemas';
import type { KeysRuntime } from '../runtime';
import { type CommandGroup, defineCommand, UsageError } from './command';
import { allPages, isNone, numberFlag, parseFlagBody } from './flags';

const columns = ['hash', 'name', 'label', 'state', 'last_used_at', 'created_at'];
const state = (k: KeyObject) => (k.revoked ? 'revoked' : k.disabled ? 'disabled' : 'active');
const row = (k: KeyObject) => [k.hash, k.name, k.label, state(k), k.last_used_at, k.created_at];

const keyOptions = {
  account: { type: 'string', required: true, description: 'account slug' },
  hash: { type: 'string', required: true, description: 'key id (uuid)' },
} as const;

/**
 * The key governance flags (issue 9), parsed by the same schema as the API's `expires_at`,
 * `allowed_models`, `rate_limit_rpm` and `include_byok_in_limit` (same rules, same messages).
 */
const governanceOptions = {
  'expires-at': {
    type: 'string',
    description: 'when the key stops working: ISO 8601 with a zone, e.g. 2030-01-01T00:00:00Z (none: never)',
  },
  'allowed-models': {
    type: 'string',
    description: 'comma-separated model ids or vendor/* patterns the key may use (none: every model)',
  },
  'rate-limit-rpm': {
    type: 'string',
    description: 'requests per minute for the key, across all proxies (none: no limit)',
  },
  'include-byok-in-limit': {
    type: 'string',
    description: 'true or false (stored; no effect: Tollgate has no BYOK yet)',
  },
} as const;

type GovernanceFlags = { [K in keyof typeof governanceOptions]: string | undefined };

/**
 * What only `keys update` sets (issue 29): the key's team and its tokens per minute, parsed by the
 * API's `team_id` and `rate_limit_tpm` rules. Inference keys are made through the API or the
 * dashboard; the CLI moves any key of the account into a team or out of it.
 */
const teamOptions = {
  'team-id': { type: 'string', description: 'team id (uuid) the key belongs to (none: no team)' },
  'rate-limit-tpm': {
    type: 'string',
    description: 'tokens per minute for the key, worst case at admission (none: no limit)',
  },
} as const;

function teamBody(o: { 'team-id'?: string; 'rate-limit-tpm'?: string }): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const team = o['team-id'];
  if (team !== undefined) body.team_id = isNone(team) ? null : team.trim();
  if (o['rate-limit-tpm'] !== undefined) body.rate_limit_tpm = numberFlag(o['rate-limit-tpm'], /^-?\d+$/);
  return body;
}

/** The flags as the API's JSON fields (`none` → null / []); a value the API refuses is a usage error. */
function governanceBody(o: GovernanceFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o['expires-at'] !== undefined)
    body.expires_at = isNone(o['expires-at']) ? null : o['expires-at'].trim();
  if (o['allowed-models'] !== undefined) {
    body.allowed_models = isNone(o['allowed-models'])
      ? []
      : o['allowed-models']
          .split(',')
          .map((m) => m.trim())
          .filter(Boolean);
  }
  if (o['rate-limit-rpm'] !== undefined) body.rate_limit_rpm = numberFlag(o['rate-limit-rpm'], /^-?\d+$/);
  if (o['include-byok-in-limit'] !== undefined) {
    const v = o['include-byok-in-limit'].trim();
    body.include_byok_in_limit = v === 'true' ? true : v === 'false' ? false : v;
  }
  return body;
}

/** The management key `hash` of the account `slug`; anything else (inference key, other account) is 404. */
async function managementKey(runtime: KeysRuntime, slug: string, rawHash: string) {
  const hash = parseId(rawHash, 'hash', 'a key id');
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
      const updated = await runtime.keys.update(account.id, hash, { disabled }, ADMIN_CLI_ACTOR);
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
        ...governanceOptions,
      },
      async run({ runtime }, o) {
        const name = o.name.trim();
        if (!name || name.length > 200) throw badRequest('name: must be 1-200 characters');
        const body = parseFlagBody(createKeyBody, { name, ...governanceBody(o) });
        const account = await runtime.accounts.requireBySlug(o.account);
        const { row: created, key } = await runtime.keys.create(
          account.id,
          { name, scope: 'management', governance: governanceOf(body) },
          ADMIN_CLI_ACTOR,
        );
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
        const keys = await allPages((offset) =>
          runtime.keys.list(account.id, { includeRevoked: true, scope: 'management', offset }),
        );
        const objects = await runtime.presenter.present(keys, 'zero');
        return { data: objects, table: { columns, rows: objects.map(row) } };
      },
    }),
    defineCommand({
      name: 'update',
      summary:
        "Change a key's name, governance (expiry, allowed models, rate limits) or team; any key of the account",
      options: {
        ...keyOptions,
        name: { type: 'string', description: 'new display name' },
        ...governanceOptions,
        ...teamOptions,
      },
      async run({ runtime }, o) {
        const body = parseFlagBody(updateKeyBody, {
          ...(o.name === undefined ? {} : { name: o.name }),
          ...governanceBody(o),
          ...teamBody(o),
        });
        if (Object.keys(body).length === 0) {
          throw new UsageError(
            'nothing to change: give --name, --expires-at, --allowed-models, --rate-limit-rpm, --rate-limit-tpm, --team-id or --include-byok-in-limit',
          );
        }
        const hash = parseId(o.hash, 'hash', 'a key id');
        const account = await runtime.accounts.requireBySlug(o.account);
        const updated = await runtime.keys.update(
          account.id,
          hash,
          { name: body.name, governance: governanceOf(body) },
          ADMIN_CLI_ACTOR,
        );
        const [object] = await runtime.presenter.present([updated], 'zero');
        return { data: object, text: `updated ${updated.id}` };
      },
    }),
    defineCommand({
      name: 'revoke-management',
      summary: 'Revoke a management key (permanent; the only way a management key can be revoked)',
      options: keyOptions,
      async run({ runtime }, o) {
        const { account, hash } = await managementKey(runtime, o.account, o.hash);
        const revoked = await runtime.keys.revoke(account.id, hash, { actor: ADMIN_CLI_ACTOR });
        return { data: { hash: revoked.id, deleted: true }, text: `revoked ${revoked.id}` };
      },
    }),
    setDisabled(true),
    setDisabled(false),
  ],
};
