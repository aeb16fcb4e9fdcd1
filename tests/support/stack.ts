/**
 * The whole Tollgate stack in this process, for root tests (OpenAPI conformance, end-to-end with real
 * client libraries): provider-sim, billing, keys and proxy started through their exported start
 * functions against the real Postgres/Redis/RabbitMQ of the test kit, isolated by a fresh database,
 * a Redis prefix and AMQP names of their own. It then does what an operator does for a newcomer:
 * an account and a management key (keys service code, the admin CLI's path), credits (billing's
 * internal API), and an inference key through the public API with that management key.
 *
 *   const stack = await startStack();
 *   const openai = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey });
 *   ...
 *   await stack.close();
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createServiceSigner,
  DEV_SERVICE_KEYS,
  generateServiceKeyPair,
  SERVICE_TOKEN_HEADER,
} from '@tollgate/auth';
import { type BillingHandle, loadConfig as loadBillingConfig, startBilling } from '@tollgate/billing';
import { type Catalog, loadCatalog } from '@tollgate/catalog';
import { usageTopology } from '@tollgate/events';
import { type KeysServiceHandle, loadConfig as loadKeysConfig, startKeysService } from '@tollgate/keys';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import {
  loadConfig as loadProxyConfig,
  type ProxyConfig,
  type ProxyHandle,
  startProxy,
} from '@tollgate/proxy';
import {
  createTestAmqp,
  createTestDatabase,
  createTestRedis,
  freePort,
  type TestAmqp,
  type TestDatabase,
  type TestRedis,
  testUsagePartitions,
} from '@tollgate/testkit';
import { vi } from 'vitest';
import { createServiceLogins, type ServiceLogins } from './logins';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
export const DEV_CATALOG_PATH = resolve(root, 'infra/catalog/dev.yaml');

/** A cheap model of the dev catalog (served by the simulator). */
export const MODEL = 'openai/gpt-4o-mini';

export interface StackAccount {
  id: string;
  slug: string;
  /** Plaintext management key of the account. */
  managementKey: string;
  managementKeyId: string;
}

export interface CreatedKey {
  /** Plaintext `sk-tg-v1-…`. */
  key: string;
  /** The key id. */
  hash: string;
  body: Record<string, unknown>;
}

export interface Stack {
  /** Proxy origin, e.g. http://127.0.0.1:41234 */
  origin: string;
  /** `${origin}/api/v1` */
  baseUrl: string;
  /** `${origin}/v1` (the alias prefix) */
  aliasUrl: string;
  /** The ready account (credits added). */
  account: StackAccount;
  /** An inference key of `account`, created through POST /keys. */
  inferenceKey: string;
  inferenceKeyId: string;
  services: { sim: ProviderSim; billing: BillingHandle; keys: KeysServiceHandle; proxy: ProxyHandle };
  /** The dev catalog (or the `catalog` option's), pointed at this stack's simulator (for extra proxies in tests). */
  catalog: Catalog;
  /** The proxy's configuration (for extra proxies in tests: `startProxy(loadConfig({...env}), {catalog})`). */
  proxyConfig: ProxyConfig;
  /** With the `dashboard` option: the port keys knows the dashboard by (`startTestDashboard` takes it). */
  dashboardPort: number | null;
  /** Isolation handles (prefixes, database) of this stack. */
  infra: { database: TestDatabase; redis: TestRedis; amqp: TestAmqp };
  /**
   * The settings every service of this stack shares (NODE_ENV, LOG_LEVEL, HOST, PORT 0, its Redis
   * and prefix, its RabbitMQ and names, USAGE_PARTITIONS): the start of one more proxy's or billing
   * worker's environment on this stack (`startProxy(loadConfig({...stack.infraEnv(), KEYS_URL, …}))`).
   */
  infraEnv(): Record<string, string>;
  /**
   * The service keys in use: the development keys, or with `productionKeys` a fresh keypair per
   * caller (base64 DER), the services running with NODE_ENV=production.
   */
  serviceKeys: Record<'proxy' | 'keys' | 'dashboard' | 'admin', { privateKey: string; publicKey: string }>;
  /**
   * With `productionKeys`: each service's own server logins (tests/support/logins.ts) its URLs use
   * (`DATABASE_URL`, `REDIS_URL`, `AMQP_URL` per service); otherwise null (the test kit's URLs).
   */
  logins: ServiceLogins['urls'] | null;
  /** A new account with a management key (the admin CLI's path) and optional credits. */
  createAccount(options?: { credits?: string; slug?: string }): Promise<StackAccount>;
  /** Adds (or with a negative amount removes) credits through billing's internal API. */
  addCredits(accountId: string, amount: string): Promise<void>;
  /** POST /keys with a management key; throws with the response body unless 201. */
  createInferenceKey(
    managementKey: string,
    body?: { name?: string; limit?: number | null; limit_reset?: string | null } & Record<string, unknown>,
  ): Promise<CreatedKey>;
  /** `fetch` against the public API with a key: `api('/keys', {key, method, body})`. */
  api(
    path: string,
    options?: {
      key?: string;
      method?: string;
      body?: unknown;
      headers?: Record<string, string>;
      prefix?: '/api/v1' | '/v1';
    },
  ): Promise<ApiResponse>;
  /** Polls GET /generation until the record exists (billing writes it asynchronously). */
  waitForGeneration(id: string, key?: string): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body of any shape, checked by the caller
  body: any;
}

/** Formats a response for assertion messages: a failing assertion prints the whole response. */
export const describeResponse = (r: ApiResponse) => `HTTP ${r.status} ${r.text.slice(0, 2000)}`;

/** TOLLGATE_TEST_USAGE_PARTITIONS (the `usage-partitions` project sets 2), else 1. */
export { testUsagePartitions };

export async function startStack(
  options: {
    credits?: string;
    /** Run keys, billing and the proxy with NODE_ENV=production and freshly generated service keys. */
    productionKeys?: boolean;
    /**
     * USAGE_PARTITIONS of the proxy and billing (default: TOLLGATE_TEST_USAGE_PARTITIONS, else 1). The
     * `usage-partitions` test project runs the end-to-end suites with 2 (issue 31).
     */
    usagePartitions?: number;
    /** The proxy's catalog, given the simulator's origin (default: the dev catalog). */
    catalog?: (simUrl: string) => Catalog;
    /**
     * The catalog of the proxy **and** billing (which prices every usage event with its own), as YAML
     * given the simulator's origin; written to a temporary file for billing's CATALOG_PATH.
     */
    catalogYaml?: (simUrl: string) => string;
    /** More proxy settings (environment variable names, e.g. CANCEL_DRAIN_MS). */
    proxyEnv?: Record<string, string>;
    /** More billing settings (e.g. WEBHOOK_ALLOWED_CIDRS for a local webhook receiver). */
    billingEnv?: Record<string, string>;
    /**
     * Reserve the dashboard's port and give it to keys as DASHBOARD_URL, so `GET /audit` merges the
     * dashboard's log; start the dashboard with `startTestDashboard`, which takes that port.
     */
    dashboard?: boolean;
    /** Options of this stack's simulator (its keys and AWS credentials). */
    sim?: Parameters<typeof startProviderSim>[0];
  } = {},
): Promise<Stack> {
  const [database, redis] = await Promise.all([createTestDatabase({ migrated: true }), createTestRedis()]);
  const amqp = createTestAmqp();
  const usagePartitions = String(options.usagePartitions ?? testUsagePartitions());
  const serviceKeys = options.productionKeys
    ? {
        proxy: generateServiceKeyPair(),
        keys: generateServiceKeyPair(),
        billing: generateServiceKeyPair(),
        dashboard: generateServiceKeyPair(),
        admin: generateServiceKeyPair(),
      }
    : {
        proxy: DEV_SERVICE_KEYS.proxy,
        keys: DEV_SERVICE_KEYS.keys,
        billing: DEV_SERVICE_KEYS.billing,
        dashboard: DEV_SERVICE_KEYS.dashboard,
        admin: DEV_SERVICE_KEYS.admin,
      };
  const trust = (...callers: Array<keyof typeof serviceKeys>) =>
    callers.map((c) => `${c}=${serviceKeys[c].publicKey}`).join(',');
  const common = {
    NODE_ENV: options.productionKeys ? 'production' : 'test',
    LOG_LEVEL: process.env.STACK_LOG_LEVEL ?? 'silent',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    HOST: '127.0.0.1',
    PORT: '0',
    USAGE_PARTITIONS: usagePartitions,
  };
  // As in production, each service logs in with its own credential (issue 23).
  const logins = options.productionKeys ? await createServiceLogins(database.url, redis, amqp) : null;
  const own = (service: 'proxy' | 'keys' | 'billing') => logins?.urls[service] ?? {};
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    const topology = usageTopology(amqp.prefix, Number(usagePartitions));
    await Promise.allSettled([
      redis.cleanup(),
      database.drop(),
      amqp.cleanup({
        queues: [...topology.partitions.map((p) => p.queue), topology.deadLetterQueue],
        exchanges: [topology.exchange, topology.deadLetterExchange],
      }),
    ]);
    await logins?.drop();
  };

  try {
    const sim = await startProviderSim({ ...options.sim, port: 0, host: '127.0.0.1' });
    closers.push(() => sim.close());

    let catalogPath = DEV_CATALOG_PATH;
    if (options.catalogYaml) {
      const dir = await mkdtemp(join(tmpdir(), 'tollgate-catalog-'));
      catalogPath = join(dir, 'catalog.yaml');
      await writeFile(catalogPath, options.catalogYaml(sim.url));
      closers.push(() => rm(dir, { recursive: true, force: true }));
    }

    // The proxy's catalog; a catalog given as an object prices billing's events too (its cost check).
    const catalog = options.catalog
      ? options.catalog(sim.url)
      : loadCatalog(catalogPath, { PROVIDER_SIM_URL: sim.url });
    // Billing asks keys who owns a key and keys asks billing for usage: keys' port is fixed first.
    const keysPort = await freePort();
    const dashboardPort = options.dashboard ? await freePort() : null;
    const billing = await startBilling(
      loadBillingConfig({
        ...common,
        DATABASE_URL: database.url,
        AMQP_URL: amqp.url,
        AMQP_PREFIX: amqp.prefix,
        BATCH_TIMEOUT_MS: '10',
        KEYS_URL: `http://127.0.0.1:${keysPort}`,
        CATALOG_PATH: catalogPath,
        SERVICE_PRIVATE_KEY: serviceKeys.billing.privateKey,
        SERVICE_PUBLIC_KEYS: trust('proxy', 'keys', 'dashboard', 'admin'),
        // Production refuses to start without its own key of the webhook secrets.
        ...(options.productionKeys ? { WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') } : {}),
        ...options.billingEnv,
        ...own('billing'),
      }),
      options.catalog ? { catalog } : {},
    );
    closers.push(() => billing.close());

    const keys = await startKeysService(
      loadKeysConfig({
        ...common,
        PORT: String(keysPort),
        DATABASE_URL: database.url,
        BILLING_URL: billing.url,
        ...(dashboardPort ? { DASHBOARD_URL: `http://127.0.0.1:${dashboardPort}` } : {}),
        LAST_USED_FLUSH_MS: '200',
        SERVICE_PRIVATE_KEY: serviceKeys.keys.privateKey,
        SERVICE_PUBLIC_KEYS: trust('proxy', 'dashboard', 'billing'),
        ...own('keys'),
      }),
    );
    closers.push(() => keys.close());

    const proxyConfig = loadProxyConfig({
      ...common,
      AMQP_URL: amqp.url,
      AMQP_PREFIX: amqp.prefix,
      KEYS_URL: keys.url,
      BILLING_URL: billing.url,
      CATALOG_PATH: DEV_CATALOG_PATH,
      KEEPALIVE_INTERVAL_MS: '15000',
      UPSTREAM_TIMEOUT_MS: '10000',
      SHUTDOWN_TIMEOUT_MS: '2000',
      SERVICE_PRIVATE_KEY: serviceKeys.proxy.privateKey,
      ...own('proxy'),
      ...options.proxyEnv,
    });
    // Spend limits and credits are enforced as in production (SPEND_GUARD defaults to redis).
    const proxy = await startProxy(proxyConfig, { catalog });
    closers.push(() => proxy.close());

    const origin = proxy.url;
    // Credits are granted as the admin CLI does (the only identity billing accepts on that route).
    const admin = createServiceSigner('admin', serviceKeys.admin.privateKey);
    const serviceToken = () => admin.sign('billing');

    const addCredits = async (accountId: string, amount: string) => {
      const res = await fetch(`${billing.url}/internal/accounts/${accountId}/credits`, {
        method: 'POST',
        headers: { [SERVICE_TOKEN_HEADER]: await serviceToken(), 'content-type': 'application/json' },
        body: JSON.stringify({ amount, note: 'test stack' }),
      });
      if (!res.ok) throw new Error(`adding credits failed: HTTP ${res.status} ${await res.text()}`);
    };

    const createAccount = async (o: { credits?: string; slug?: string } = {}): Promise<StackAccount> => {
      const slug = o.slug ?? `acct-${randomBytes(4).toString('hex')}`;
      const account = await keys.runtime.accounts.create({ slug, name: slug });
      const { row, key } = await keys.runtime.keys.create(account.id, {
        name: 'ops',
        scope: 'management',
        limit: null,
        limitReset: null,
      });
      if (o.credits) await addCredits(account.id, o.credits);
      return { id: account.id, slug, managementKey: key, managementKeyId: row.id };
    };

    const api: Stack['api'] = async (path, o = {}) => {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      if (o.body !== undefined) headers['content-type'] ??= 'application/json';
      const res = await fetch(`${origin}${o.prefix ?? '/api/v1'}${path}`, {
        method: o.method ?? (o.body === undefined ? 'GET' : 'POST'),
        headers,
        body: o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body),
      });
      const text = await res.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: res.status, headers: res.headers, text, body };
    };

    const createInferenceKey: Stack['createInferenceKey'] = async (managementKey, body = {}) => {
      const r = await api('/keys', { key: managementKey, body: { name: 'inference', ...body } });
      if (r.status !== 201) throw new Error(`POST /keys: ${describeResponse(r)}`);
      return { key: r.body.data.key, hash: r.body.data.hash, body: r.body };
    };

    const account = await createAccount({ credits: options.credits ?? '100' });
    const inference = await createInferenceKey(account.managementKey, { name: 'e2e inference' });

    const waitForGeneration = (id: string, key = inference.key) =>
      vi.waitFor(
        async () => {
          const r = await api(`/generation?id=${encodeURIComponent(id)}`, { key });
          if (r.status === 404) throw new Error(`generation ${id} not recorded yet: ${describeResponse(r)}`);
          return r;
        },
        { timeout: 10_000, interval: 25 },
      );

    return {
      origin,
      baseUrl: `${origin}/api/v1`,
      aliasUrl: `${origin}/v1`,
      account,
      inferenceKey: inference.key,
      inferenceKeyId: inference.hash,
      services: { sim, billing, keys, proxy },
      catalog,
      proxyConfig,
      dashboardPort,
      infra: { database, redis, amqp },
      infraEnv: () => ({ ...common, AMQP_URL: amqp.url, AMQP_PREFIX: amqp.prefix }),
      serviceKeys,
      logins: logins?.urls ?? null,
      createAccount,
      addCredits,
      createInferenceKey,
      api,
      waitForGeneration,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
