import { randomBytes } from 'node:crypto';
import {
  devServiceSigner,
  digestKey,
  type KeyScope,
  SERVICE_TOKEN_HEADER,
  type ServiceName,
} from '@tollgate/auth';
import { createLogger, type Logger } from '@tollgate/logger';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '@tollgate/testkit';
import { type KeysConfig, loadConfig } from '../src/config';
import type { KeysRuntimeOptions } from '../src/runtime';
import { type KeysServiceHandle, startKeysService } from '../src/service';

/**
 * Test helper for every service's tests: an isolated keys service (fresh Postgres database, own
 * Redis prefix, random port), plus accounts, management keys and the tokens the proxy would mint.
 *
 *   const keys = await startTestKeysService();
 *   const acme = await keys.createAccount();
 *   await fetch(`${keys.url}/keys`, { headers: await keys.callerHeaders(acme.managementKey) });
 *   await keys.close();
 */
export interface TestKey {
  id: string;
  accountId: string;
  scope: KeyScope;
  /** Plaintext `sk-tg-v1-…`. */
  key: string;
  digest: string;
}

export interface TestAccount {
  id: string;
  slug: string;
  managementKey: TestKey;
}

export interface TestKeysService {
  url: string;
  config: KeysConfig;
  service: KeysServiceHandle;
  /** The Redis prefix the service uses (REDIS_PREFIX) and a client without prefix for assertions. */
  redis: TestRedis;
  database: TestDatabase;
  /** A ready account with one management key. */
  account: TestAccount;
  createAccount(slug?: string): Promise<TestAccount>;
  /** Creates a key directly (dashboard path): inference by default. */
  createKey(
    accountId: string,
    options?: {
      scope?: KeyScope;
      name?: string;
      limit?: string;
      limitReset?: 'daily' | 'weekly' | 'monthly';
    },
  ): Promise<TestKey>;
  /** `x-service-token` the proxy sends for a caller's key. */
  callerToken(key: Pick<TestKey, 'id' | 'accountId' | 'scope'>): Promise<string>;
  callerHeaders(key: Pick<TestKey, 'id' | 'accountId' | 'scope'>): Promise<Record<string, string>>;
  /** `x-service-token` for an internal call from `service` (default the proxy), signed with its dev key. */
  serviceToken(service?: ServiceName): Promise<string>;
  close(): Promise<void>;
}

export async function startTestKeysService(
  options: { env?: Record<string, string>; logger?: Logger } & Partial<
    Omit<KeysRuntimeOptions, 'logger'>
  > = {},
): Promise<TestKeysService> {
  const [database, redis] = await Promise.all([createTestDatabase({ migrated: true }), createTestRedis()]);
  const config = loadConfig({
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const logger = options.logger ?? createLogger({ name: 'keys-test', level: config.LOG_LEVEL });
  const service = await startKeysService(config, { ...options, logger });
  const { runtime } = service;

  const createKey: TestKeysService['createKey'] = async (accountId, o = {}) => {
    const scope = o.scope ?? 'inference';
    const { row, key } = await runtime.keys.create(accountId, {
      name: o.name ?? `${scope}-key`,
      scope,
      limit: o.limit ?? null,
      limitReset: o.limitReset ?? null,
    });
    return { id: row.id, accountId, scope, key, digest: digestKey(key) };
  };
  const createAccount = async (slug = `acct-${randomBytes(4).toString('hex')}`): Promise<TestAccount> => {
    const account = await runtime.accounts.create({ slug, name: slug });
    const managementKey = await createKey(account.id, { scope: 'management', name: 'ops' });
    return { id: account.id, slug, managementKey };
  };
  const callerToken = (key: Pick<TestKey, 'id' | 'accountId' | 'scope'>) =>
    devServiceSigner('proxy').sign('keys', {
      kind: 'key',
      keyId: key.id,
      accountId: key.accountId,
      scope: key.scope,
    });

  const account = await createAccount();
  return {
    url: service.url,
    config,
    service,
    redis,
    database,
    account,
    createAccount,
    createKey,
    callerToken,
    callerHeaders: async (key) => ({
      [SERVICE_TOKEN_HEADER]: await callerToken(key),
      'content-type': 'application/json',
    }),
    serviceToken: (name = 'proxy') => devServiceSigner(name).sign('keys'),
    async close() {
      await service.close();
      await Promise.all([redis.cleanup(), database.drop()]);
    },
  };
}
