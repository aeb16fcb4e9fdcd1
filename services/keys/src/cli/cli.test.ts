import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, isActive, proxyLookup } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';
import { runCli } from './command';
import { commandGroups } from './main';

let t: TestKeysService;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  t = await startTestKeysService();
  env = {
    DATABASE_URL: t.config.DATABASE_URL,
    REDIS_URL: t.config.REDIS_URL,
    REDIS_PREFIX: t.config.REDIS_PREFIX,
  };
});
afterAll(async () => {
  await t?.close();
});

async function cli(args: string, extraEnv: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args.split(' ').filter(Boolean), commandGroups, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: { ...env, ...extraEnv },
  });
  const json = () => JSON.parse(stdout);
  return { code, stdout, stderr, json };
}

let n = 0;
const slug = () => `cli-${process.pid}-${++n}`;

describe('admin CLI', () => {
  it('creates and lists accounts (--json and table)', async () => {
    const s = slug();
    const created = await cli(`accounts create --slug ${s} --name Acme --json`);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json()).toEqual({
      data: {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        slug: s,
        name: 'Acme',
        created_at: expect.any(String),
      },
    });
    const listed = await cli('accounts list --json');
    expect(listed.json().data).toContainEqual(created.json().data);
    const table = await cli('accounts list');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^id\s+slug\s+name\s+created_at/);
    expect(table.stdout).toContain(s);
  });

  it('refuses a duplicate or malformed slug', async () => {
    const s = slug();
    expect((await cli(`accounts create --slug ${s} --name A`)).code).toBe(0);
    const dup = await cli(`accounts create --slug ${s} --name A --json`);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    expect(dup.json().error.metadata.error_type).toBe('conflict');
    for (const bad of ['Acme', 'a_b', '-a', 'a-']) {
      const res = await cli(`accounts create --slug ${bad} --name A`);
      expect(res.code, bad).toBe(2);
      expect(res.stderr).toMatch(/slug/);
    }
  });

  it('creates, lists and revokes management keys, updating the key cache like the API', async () => {
    const s = slug();
    const account = (await cli(`accounts create --slug ${s} --name Ops --json`)).json().data;
    const created = await cli(`keys create-management --account ${s} --name ops --json`);
    expect(created.code, created.stderr).toBe(0);
    const key = created.json().data;
    expect(key).toMatchObject({
      scope: 'management',
      name: 'ops',
      limit: null,
      disabled: false,
      revoked: false,
    });
    expect(key.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(await proxyLookup(t, key.key)).toMatchObject({
      id: key.hash,
      accountId: account.id,
      scope: 'management',
    });
    // The new key manages the account through the API.
    expectStatus(
      await api(t, 'GET', '/keys', { as: { id: key.hash, accountId: account.id, scope: 'management' } }),
      200,
    );

    const table = await cli(`keys create-management --account ${s} --name second`);
    expect(table.stdout).toMatch(/key: sk-tg-v1-[0-9a-f]{64}/);

    const listed = await cli(`keys list-management --account ${s} --json`);
    expect(listed.json().data.map((k: { name: string }) => k.name)).toEqual(['second', 'ops']);
    for (const k of listed.json().data) expect(k.key).toBeUndefined();

    const revoked = await cli(`keys revoke-management --account ${s} --hash ${key.hash} --json`);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json()).toEqual({ data: { hash: key.hash, deleted: true } });
    expect(isActive(await proxyLookup(t, key.key))).toBe(false);
    const again = await cli(`keys revoke-management --account ${s} --hash ${key.hash} --json`);
    expect(again.code).toBe(0);

    const after = await cli(`keys list-management --account ${s}`);
    expect(after.stdout).toMatch(new RegExp(`${key.hash}\\s+ops\\s+\\S+\\s+revoked`));
  });

  it('re-enables a management key disabled through the API', async () => {
    const s = slug();
    const account = (await cli(`accounts create --slug ${s} --name A --json`)).json().data;
    const key = (await cli(`keys create-management --account ${s} --name ops --json`)).json().data;
    const other = (await cli(`keys create-management --account ${s} --name ops2 --json`)).json().data;
    const as = { id: key.hash, accountId: account.id, scope: 'management' as const };
    // A key cannot disable itself (issue 14); another management key of the account can.
    expect((await api(t, 'PATCH', `/keys/${key.hash}`, { as, body: { disabled: true } })).status).toBe(403);
    const asOther = { id: other.hash, accountId: account.id, scope: 'management' as const };
    await expectStatus(
      await api(t, 'PATCH', `/keys/${key.hash}`, { as: asOther, body: { disabled: true } }),
      200,
    );
    expect(isActive(await proxyLookup(t, key.key))).toBe(false);

    const enabled = await cli(`keys enable-management --account ${s} --hash ${key.hash} --json`);
    expect(enabled.code, enabled.stderr).toBe(0);
    expect(enabled.json().data).toMatchObject({ hash: key.hash, disabled: false, revoked: false });
    expect(isActive(await proxyLookup(t, key.key))).toBe(true);

    const disabled = await cli(`keys disable-management --account ${s} --hash ${key.hash} --json`);
    expect(disabled.json().data).toMatchObject({ disabled: true });
    expect(isActive(await proxyLookup(t, key.key))).toBe(false);
    const inference = await t.createKey(t.account.id);
    expect(
      (await cli(`keys enable-management --account ${t.account.slug} --hash ${inference.id}`)).code,
    ).toBe(2);
  });

  it('revoke-management does not touch inference keys or other accounts', async () => {
    const s = slug();
    (await cli(`accounts create --slug ${s} --name A`)).code;
    const inference = await t.createKey(t.account.id);
    const res = await cli(`keys revoke-management --account ${t.account.slug} --hash ${inference.id}`);
    expect(res.code).toBe(2);
    const foreign = await cli(`keys revoke-management --account ${s} --hash ${t.account.managementKey.id}`);
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toMatch(/No such key/);
    expect(isActive(await proxyLookup(t, t.account.managementKey.key))).toBe(true);
  });

  it('sets the governance fields on create-management and update (issue 9), like the API', async () => {
    const s = slug();
    await cli(`accounts create --slug ${s} --name Gov`);
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const created = await cli(
      `keys create-management --account ${s} --name ops --expires-at ${expires} --rate-limit-rpm 30 --json`,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.json().data).toMatchObject({
      scope: 'management',
      expires_at: expires,
      rate_limit_rpm: 30,
    });
    const account = await t.service.runtime.accounts.requireBySlug(s);
    const inference = await t.createKey(account.id, { name: 'app' });
    const updated = await cli(
      `keys update --account ${s} --hash ${inference.id} --allowed-models openai/*,anthropic/claude-3-haiku --rate-limit-rpm 5 --include-byok-in-limit true --json`,
    );
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json().data).toMatchObject({
      hash: inference.id,
      allowed_models: ['openai/*', 'anthropic/claude-3-haiku'],
      rate_limit_rpm: 5,
      include_byok_in_limit: true,
      expires_at: null,
    });
    // The key cache sees the change at once (the proxy enforces it from there).
    expect(await proxyLookup(t, inference.key)).toMatchObject({ rateLimitRpm: 5 });
    const cleared = await cli(
      `keys update --account ${s} --hash ${inference.id} --allowed-models none --rate-limit-rpm none --json`,
    );
    expect(cleared.json().data).toMatchObject({ allowed_models: [], rate_limit_rpm: null });
    const renamed = await cli(`keys update --account ${s} --hash ${inference.id} --name renamed --json`);
    expect(renamed.json().data).toMatchObject({ name: 'renamed', include_byok_in_limit: true });
  });

  it.each([
    [
      'keys create-management --account acme --name ops --expires-at 2001-01-01T00:00:00Z',
      /--expires-at: must be in the future/,
    ],
    [
      'keys create-management --account acme --name ops --expires-at tomorrow',
      /--expires-at: expected an ISO 8601/,
    ],
    [
      'keys create-management --account acme --name ops --rate-limit-rpm 0',
      /--rate-limit-rpm: must be at least 1/,
    ],
    [
      'keys create-management --account acme --name ops --rate-limit-rpm fast',
      /--rate-limit-rpm: expected a positive integer/,
    ],
    [
      'keys create-management --account acme --name ops --allowed-models gpt-4o',
      /--allowed-models: each entry must be a model id/,
    ],
    [
      'keys create-management --account acme --name ops --include-byok-in-limit yes',
      /--include-byok-in-limit: expected true or false/,
    ],
    ['keys update --account acme --hash 00000000-0000-4000-8000-000000000000', /nothing to change/],
  ])('exits 2 naming the flag for a bad governance value: %s', async (args, message) => {
    const res = await cli(args);
    expect(res.code, res.stderr + res.stdout).toBe(2);
    expect(res.stderr + res.stdout).toMatch(message);
  });

  it.each([
    ['', /Usage: tollgate/],
    ['nope', /unknown command group "nope"/],
    ['keys', /create-management/],
    ['keys nope', /unknown command "keys nope"/],
    ['keys create-management --name ops', /missing required option --account/],
    ['keys create-management --account acme --name ops --colour red', /colour/],
    ['keys create-management --account acme --name', /--name/],
    ['accounts list extra', /extra/],
    ['keys revoke-management --account acme --hash not-a-uuid', /hash: must be a key id \(uuid\)/],
    ['keys list-management --account no-such-account', /No account with slug "no-such-account"/],
  ])('exits 2 with a clear message for bad arguments: %s', async (args, message) => {
    const res = await cli(args);
    expect(res.code, res.stderr + res.stdout).toBe(2);
    expect(res.stderr + res.stdout).toMatch(message);
  });

  it('creates, lists, updates and deletes teams with budgets (issue 29), like the API', async () => {
    const s = slug();
    await cli(`accounts create --slug ${s} --name Acme`);
    const created = await cli(
      `teams create --account ${s} --name search --limit 12.5 --limit-reset weekly --rate-limit-tpm 900 --json`,
    );
    expect(created.code, created.stderr).toBe(0);
    const team = created.json().data;
    expect(team).toMatchObject({ name: 'search', limit: 12.5, limit_reset: 'weekly', rate_limit_tpm: 900 });
    const updated = await cli(
      `teams update --account ${s} --id ${team.id} --limit none --rate-limit-tpm 50 --json`,
    );
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json().data).toMatchObject({ limit: null, limit_reset: 'weekly', rate_limit_tpm: 50 });
    const listed = await cli(`teams list --account ${s}`);
    expect(listed.stdout).toMatch(/^id\s+name\s+keys\s+limit\s+limit_reset\s+rate_limit_tpm/);
    const bad = await cli(`teams update --account ${s} --id ${team.id} --limit-reset hourly`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--limit-reset/);
    const nothing = await cli(`teams update --account ${s} --id ${team.id}`);
    expect(nothing.code).toBe(2);
    // A key joins the team (and gets tokens per minute) from the CLI, as through `PATCH /keys/{hash}`.
    const account = await t.service.runtime.accounts.requireBySlug(s);
    const key = await t.createKey(account.id, { name: 'search app' });
    const joined = await cli(
      `keys update --account ${s} --hash ${key.id} --team-id ${team.id} --rate-limit-tpm 300 --json`,
    );
    expect(joined.code, joined.stderr).toBe(0);
    expect(joined.json().data).toMatchObject({ hash: key.id, team_id: team.id, rate_limit_tpm: 300 });
    expect(await proxyLookup(t, key.key)).toMatchObject({ teamId: team.id, rateLimitTpm: 300 });
    expect((await cli(`teams list --account ${s} --json`)).json().data[0]).toMatchObject({ key_count: 1 });
    const stranger = await cli(
      `keys update --account ${s} --hash ${key.id} --team-id 00000000-0000-4000-8000-000000000000`,
    );
    expect(stranger.code).toBe(2);
    expect(stranger.stderr + stranger.stdout).toMatch(/team/i);
    const badTeam = await cli(`keys update --account ${s} --hash ${key.id} --team-id search`);
    expect(badTeam.code).toBe(2);
    expect(badTeam.stderr).toMatch(/--team-id: must be a team id/);
    const left = await cli(
      `keys update --account ${s} --hash ${key.id} --team-id none --rate-limit-tpm none --json`,
    );
    expect(left.json().data).toMatchObject({ team_id: null, rate_limit_tpm: null });
    expect((await cli(`teams delete --account ${s} --id ${team.id}`)).code).toBe(0);
    expect((await cli(`teams list --account ${s} --json`)).json().data).toEqual([]);
  });

  it("switches an account's opt-in bodies (set-bodies), audited and reaching every key's cached record", async () => {
    const s = slug();
    const account = (await cli(`accounts create --slug ${s} --name Bodies --json`)).json().data;
    const key = (await cli(`keys create-management --account ${s} --name ops --json`)).json().data;
    expect((await proxyLookup(t, key.key))?.storeBodies).toBeFalsy();

    const on = await cli(`accounts set-bodies --account ${s} --json`);
    expect(on.code, on.stderr).toBe(0);
    expect(on.json()).toEqual({ data: { account: s, account_id: account.id, store_bodies: true } });
    expect((await proxyLookup(t, key.key))?.storeBodies).toBe(true);
    const shown = await api(t, 'GET', '/account', {
      as: { id: key.hash, accountId: account.id, scope: 'management' },
    });
    expectStatus(shown, 200);
    expect(shown.body.data.store_bodies).toBe(true);

    const off = await cli(`accounts set-bodies --account ${s} --off`);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toMatch(/kept only for keys that ask/);
    expect((await proxyLookup(t, key.key))?.storeBodies).toBeFalsy();
    // Off again changes nothing: no third audit entry.
    expect((await cli(`accounts set-bodies --account ${s} --off`)).code).toBe(0);

    const entries = await t.service.runtime.db
      .selectFrom('keys.audit_log')
      .select(['actor_kind', 'before', 'after'])
      .where('account_id', '=', account.id)
      .where('action', '=', 'account.update')
      .orderBy('id')
      .execute();
    expect(entries).toEqual([
      { actor_kind: 'admin_cli', before: { store_bodies: false }, after: { store_bodies: true } },
      { actor_kind: 'admin_cli', before: { store_bodies: true }, after: { store_bodies: false } },
    ]);

    const unknown = await cli('accounts set-bodies --account no-such-account-here');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/account/i);
  });

  it('prints help with exit code 0 when asked', async () => {
    for (const args of ['--help', 'keys --help', 'keys create-management --help']) {
      const res = await cli(args);
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/tollgate/);
    }
  });

  it('refuses to create a management key when Redis is down (exit 1, nothing created)', async () => {
    const res = await cli(`keys create-management --account ${t.account.slug} --name x --json`, {
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    expect(res.code).toBe(1);
    expect(res.json().error.metadata.error_type).toBe('service_unavailable');
    const listed = await cli(`keys list-management --account ${t.account.slug} --json`);
    expect(listed.json().data.map((k: { name: string }) => k.name)).toEqual(['ops']);
  });

  it('runs as `pnpm --silent tollgate … --json` from the repository root', async () => {
    const root = fileURLToPath(new URL('../../../../', import.meta.url));
    const s = slug();
    const run = (args: string[]) =>
      promisify(execFile)('pnpm', ['--silent', 'tollgate', ...args], {
        cwd: root,
        env: { ...process.env, ...env },
      });
    await run(['accounts', 'create', '--slug', s, '--name', 'Acme']);
    const { stdout } = await run(['keys', 'create-management', '--account', s, '--name', 'ops', '--json']);
    const data = JSON.parse(stdout).data;
    expect(data).toMatchObject({ scope: 'management', name: 'ops' });
    expect(data.key).toMatch(/^sk-tg-v1-/);
    const bad = await run(['keys', 'create-management', '--account', s]).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/missing required option --name/) });
  }); // the suite's testTimeout: three pnpm + tsx starts took over 30 s on a slow 2-core host
});
