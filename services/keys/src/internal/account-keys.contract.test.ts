/**
 * Owner's side of the dashboard's key contracts (@tollgate/contracts: getAccount, listAccountKeys,
 * createAccountKey, updateAccountKey, revokeAccountKey): every answer of the real routes parses with the
 * contract and declares every field it carries; the request schemas' refusals are 400s naming the field.
 */
import {
  createAccountKey,
  getAccount,
  listAccountKeys,
  queryString,
  revokeAccountKey,
  updateAccountKey,
} from '@tollgate/contracts';
import { ACTOR_USER_HEADER } from '@tollgate/http';
import { expectContract } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';

let t: TestKeysService;
beforeAll(async () => {
  t = await startTestKeysService();
});
afterAll(async () => {
  await t?.close();
});

// The dashboard names the user acting (the keys service's audit log).
const acting = { [ACTOR_USER_HEADER]: '6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f' };
const call = async (method: string, path: string, body?: unknown) =>
  api(t, method, path, { token: await t.serviceToken('dashboard'), body, headers: acting });

describe("keys' dashboard contracts (owner side)", () => {
  it('getAccount', async () => {
    const r = await call(getAccount.method, getAccount.path(t.account.id));
    expectStatus(r, 200);
    expectContract(getAccount.response, r.body);
  });

  it('createAccountKey, updateAccountKey, listAccountKeys, revokeAccountKey (governance fields included)', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await call(createAccountKey.method, createAccountKey.path(t.account.id), {
      name: 'contract',
      limit: 3,
      limit_reset: 'daily',
      expires_at: expiresAt,
      include_byok_in_limit: true,
      allowed_models: ['openai/*'],
      rate_limit_rpm: 60,
    });
    expectStatus(created, 201);
    expectContract(createAccountKey.response, created.body);
    expect(created.body.data).toMatchObject({
      expires_at: expiresAt,
      include_byok_in_limit: true,
      allowed_models: ['openai/*'],
      rate_limit_rpm: 60,
    });
    const hash = created.body.data.hash as string;

    const updated = await call(updateAccountKey.method, updateAccountKey.path(t.account.id, hash), {
      name: 'contract 2',
      allowed_models: [],
      rate_limit_rpm: null,
      expires_at: null,
    });
    expectStatus(updated, 200);
    expectContract(updateAccountKey.response, updated.body);
    expect(updated.body.data).toMatchObject({ allowed_models: [], rate_limit_rpm: null, expires_at: null });

    const list = await call(
      listAccountKeys.method,
      `${listAccountKeys.path(t.account.id)}${queryString({ include_revoked: 'true', offset: '0' })}`,
    );
    expectStatus(list, 200);
    expectContract(listAccountKeys.response, list.body);
    expect(list.body.data.map((k: { hash: string }) => k.hash)).toContain(hash);

    const revoked = await call(revokeAccountKey.method, revokeAccountKey.path(t.account.id, hash));
    expectStatus(revoked, 200);
    expectContract(revokeAccountKey.response, revoked.body);
  });

  it('refuses what the request schemas refuse with a 400 naming the field', async () => {
    const keysPath = listAccountKeys.path(t.account.id);
    expectError(await call('GET', `${keysPath}?offset=-1`), 400, 'bad_request', /^offset:/);
    expectError(
      await call('GET', `${keysPath}?include_revoked=maybe`),
      400,
      'bad_request',
      /^include_revoked:/,
    );
    expectError(
      await call('GET', `${keysPath}?account=x`),
      400,
      'bad_request',
      /^account: unknown parameter/,
    );
    expectError(
      await call('POST', keysPath, { name: 'x', expires_at: '2001-01-01T00:00:00Z' }),
      400,
      'bad_request',
      /^expires_at:/,
    );
    expectError(
      await call('POST', keysPath, { name: 'x', allowed_models: ['no-slash'] }),
      400,
      'bad_request',
      /^allowed_models/,
    );
    expectError(
      await call('PATCH', updateAccountKey.path(t.account.id, t.account.managementKey.id), {
        rate_limit_rpm: 0,
      }),
      400,
      'bad_request',
      /^rate_limit_rpm:/,
    );
  });
});
