/**
 * Service identity end to end (issue 14), in production mode: keys, billing and the proxy run with
 * NODE_ENV=production and their own freshly generated Ed25519 keys (no development key anywhere).
 * The normal flows work — a completion whose key is resolved through the keys service and whose
 * spend counters are rebuilt by billing, the forwarded account routes, the admin CLI granting
 * credits — while the proxy's own key cannot grant credits or set postpaid, and the CLI with any key
 * but the admin's is refused.
 */
import { createServiceSigner, DEV_SERVICE_KEYS, digestKey, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendAccountHash, spendKeyHash } from '../../packages/spend/src/store';
import { loadConfig as loadBillingConfig } from '../../services/billing/src/config';
import { runCli } from '../../services/keys/src/cli/command';
import { commandGroups } from '../../services/keys/src/cli/main';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ productionKeys: true });
});
afterAll(async () => {
  await stack?.close();
});

async function cli(args: string[], env: NodeJS.ProcessEnv) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, '--json'], commandGroups, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: {
      NODE_ENV: 'production',
      // The keys service's own logins (the CLI is its tool).
      DATABASE_URL: stack.logins?.keys.DATABASE_URL ?? '',
      REDIS_URL: stack.logins?.keys.REDIS_URL ?? '',
      REDIS_PREFIX: stack.infra.redis.prefix,
      BILLING_URL: stack.services.billing.url,
      // The CLI works on the keys database as the keys service does: keys' own identity.
      SERVICE_PRIVATE_KEY: stack.serviceKeys.keys.privateKey,
      SERVICE_PUBLIC_KEYS: `proxy=${stack.serviceKeys.proxy.publicKey}`,
      ...env,
    },
  });
  return { code, stdout, stderr };
}

const billingCall = (method: string, path: string, token: string, body: unknown) =>
  fetch(`${stack.services.billing.url}${path}`, {
    method,
    headers: { [SERVICE_TOKEN_HEADER]: token, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('service identity with production keys', () => {
  it('serves a completion through the keys resolve path and a billing spend rebuild, then the account routes', async () => {
    const { client, prefix } = stack.infra.redis;
    const account = await stack.createAccount({ credits: '5' });
    const key = await stack.createInferenceKey(account.managementKey);
    // Nothing cached: the proxy must ask keys (resolve) and billing (spend rebuild) with its own key.
    await client.del(
      stack.services.keys.runtime.cache.redisKey(digestKey(key.key)),
      spendAccountHash(prefix, account.id),
      spendKeyHash(prefix, key.hash),
    );
    const r = await stack.api('/chat/completions', {
      key: key.key,
      body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
    });
    expect(r.status, describeResponse(r)).toBe(200);
    expect(await client.exists(spendAccountHash(prefix, account.id))).toBe(1);
    // keys' resolve route refilled the cache entry it was asked for (the proxy's token was accepted).
    expect(await client.exists(stack.services.keys.runtime.cache.redisKey(digestKey(key.key)))).toBe(1);
    const credits = await stack.api('/credits', { key: key.key });
    expect(credits.status, describeResponse(credits)).toBe(200);
    expect(credits.body.data.total_credits).toBe(5);
    const keys = await stack.api('/keys', { key: account.managementKey });
    expect(keys.status, describeResponse(keys)).toBe(200);
  });

  it("refuses the proxy's own key on the credit grant and postpaid routes (403), nothing changed", async () => {
    const account = await stack.createAccount({ credits: '1' });
    const proxy = createServiceSigner('proxy', stack.serviceKeys.proxy.privateKey);
    const grant = await billingCall(
      'POST',
      `/internal/accounts/${account.id}/credits`,
      await proxy.sign('billing'),
      { amount: '1000000' },
    );
    expect(grant.status).toBe(403);
    const postpaid = await billingCall(
      'PUT',
      `/internal/accounts/${account.id}/postpaid`,
      await proxy.sign('billing'),
      { postpaid: true },
    );
    expect(postpaid.status).toBe(403);
    // Signing as admin with the proxy's key (or the public dev admin key) is not being admin.
    for (const privateKey of [stack.serviceKeys.proxy.privateKey, DEV_SERVICE_KEYS.admin.privateKey]) {
      const forged = await createServiceSigner('admin', privateKey).sign('billing');
      expect(
        (await billingCall('POST', `/internal/accounts/${account.id}/credits`, forged, { amount: '1' }))
          .status,
      ).toBe(401);
    }
    const credits = await stack.api('/credits', { key: account.managementKey });
    expect(credits.body.data.total_credits).toBe(1);
  });

  it('the admin CLI grants credits with the admin key only', async () => {
    const account = await stack.createAccount();
    const ok = await cli(['credits', 'add', '--account', account.slug, '--amount', '7'], {
      ADMIN_PRIVATE_KEY: stack.serviceKeys.admin.privateKey,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).data.total_credits).toBe('7');

    // Another service's key as ADMIN_PRIVATE_KEY: billing does not trust it as admin.
    const wrong = await cli(['credits', 'add', '--account', account.slug, '--amount', '7'], {
      ADMIN_PRIVATE_KEY: stack.serviceKeys.proxy.privateKey,
    });
    expect(wrong.code).not.toBe(0);
    // The development admin key (or none, its default) is refused in production before any call.
    const dev = await cli(['credits', 'add', '--account', account.slug, '--amount', '7'], {});
    expect(dev.code).not.toBe(0);
    expect(dev.stderr).toMatch(/ADMIN_PRIVATE_KEY/);
    const credits = await stack.api('/credits', { key: account.managementKey });
    expect(credits.body.data.total_credits).toBe(7);
  });

  it('a service configured with a development key does not start in production', () => {
    expect(() =>
      loadBillingConfig({
        NODE_ENV: 'production',
        SERVICE_PUBLIC_KEYS: `admin=${DEV_SERVICE_KEYS.admin.publicKey}`,
      }),
    ).toThrow(/SERVICE_PUBLIC_KEYS: holds a development key/);
  });
});
