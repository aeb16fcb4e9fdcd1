import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { devServiceVerifier, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { loadCatalog } from '@tollgate/catalog';
import {
  declareUsageTopology,
  parseUsageEvent,
  type RefusalEventV1,
  type UsageEventV1,
  usageMessageBodies,
  usageTopology,
} from '@tollgate/events';
import {
  startTestKeysService,
  type TestAccount,
  type TestKey,
  type TestKeysService,
} from '@tollgate/keys/testing';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { createTestAmqp } from '@tollgate/testkit';
import amqp from 'amqplib';
import { DEFAULT_CATALOG_PATH, loadConfig, type ProxyConfig } from '../src/config';
import { type ProxyDeps, type ProxyHandle, startProxy } from '../src/http/app';

/**
 * The real stack for the proxy's integration tests: Postgres + Redis (through an in-process keys
 * service), RabbitMQ (a consumer on the usage queue collects every event), the provider simulator
 * (with a record of upstream requests that ended before their response did), a billing stand-in
 * that echoes what it was forwarded, and the proxy itself.
 */
export interface ProxyStack {
  proxy: ProxyHandle;
  config: ProxyConfig;
  /** `${proxy.url}/api/v1` */
  api: string;
  keys: TestKeysService;
  sim: ProviderSim;
  billing: { url: string; requests: ForwardedRequest[] };
  account: TestAccount;
  /** An inference key of `account`. */
  inference: TestKey;
  /** Usage events consumed from the queue, in arrival order (refusal events apart, `refusals`). */
  events: UsageEventV1[];
  /** Refusal events consumed from the queue, in arrival order. */
  refusals: RefusalEventV1[];
  /** Upstream requests whose connection closed before the simulator finished its response. */
  upstreamAborts: number;
  /** Requests the simulator received. */
  upstreamRequests: number;
  eventFor(requestId: string): UsageEventV1 | undefined;
  /** The usage event of `requestId` once it arrives (rejects after `timeoutMs`). */
  waitForEvent(requestId: string, timeoutMs?: number): Promise<UsageEventV1>;
  /** The refusal event of `requestId` once it arrives (rejects after `timeoutMs`). */
  waitForRefusal(requestId: string, timeoutMs?: number): Promise<RefusalEventV1>;
  close(): Promise<void>;
}

export interface ForwardedRequest {
  method: string;
  url: string;
  claims: unknown;
  body: string;
}

async function startBillingStandIn() {
  const verifier = devServiceVerifier('billing');
  const requests: ForwardedRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      const token = req.headers[SERVICE_TOKEN_HEADER];
      const claims = typeof token === 'string' ? await verifier.verify(token) : null;
      const record = {
        method: req.method ?? '',
        url: req.url ?? '',
        claims,
        body: Buffer.concat(parts).toString(),
      };
      requests.push(record);
      const body = JSON.stringify({ data: { echo: record } });
      res.writeHead(req.url?.startsWith('/generation?id=missing') ? 404 : 200, {
        'content-type': 'application/json',
      });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

export async function startProxyStack(
  options: { env?: Record<string, string>; deps?: ProxyDeps } = {},
): Promise<ProxyStack> {
  const amqpInfo = createTestAmqp();
  const topology = usageTopology(amqpInfo.prefix);
  const [keys, sim] = await Promise.all([startTestKeysService(), startProviderSim()]);
  const billing = await startBillingStandIn();

  let upstreamAborts = 0;
  let upstreamRequests = 0;
  sim.server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    upstreamRequests++;
    res.once('close', () => {
      if (!res.writableFinished) upstreamAborts++;
    });
  });

  // Collect every usage event the proxy publishes.
  const conn = await amqp.connect(amqpInfo.url);
  const channel = await conn.createChannel();
  await declareUsageTopology(channel, topology);
  const events: UsageEventV1[] = [];
  const refusals: RefusalEventV1[] = [];
  await channel.consume(topology.queue, (msg) => {
    if (!msg) return;
    for (const body of usageMessageBodies(msg.content, msg.properties.type)) {
      const parsed = parseUsageEvent(body);
      if (!parsed.ok) events.push({ invalid: parsed.reason } as unknown as UsageEventV1);
      else if (parsed.event.type === 'usage') events.push(parsed.event);
      else refusals.push(parsed.event);
    }
    channel.ack(msg);
  });

  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL: keys.redis.url,
    REDIS_PREFIX: keys.redis.prefix,
    AMQP_URL: amqpInfo.url,
    AMQP_PREFIX: amqpInfo.prefix,
    KEYS_URL: keys.url,
    BILLING_URL: billing.url,
    LOG_LEVEL: 'silent',
    KEEPALIVE_INTERVAL_MS: '15000',
    SHUTDOWN_TIMEOUT_MS: '5000',
    // The billing here is a stand-in: no spend counters to rebuild from.
    SPEND_GUARD: 'off',
    ...options.env,
  });
  const catalog = loadCatalog(DEFAULT_CATALOG_PATH, { ...process.env, PROVIDER_SIM_URL: sim.url });
  const proxy = await startProxy(config, { catalog, ...options.deps });
  const inference = await keys.createKey(keys.account.id, { name: 'inference' });

  const stack: ProxyStack = {
    proxy,
    config,
    api: `${proxy.url}/api/v1`,
    keys,
    sim,
    billing,
    account: keys.account,
    inference,
    events,
    refusals,
    get upstreamAborts() {
      return upstreamAborts;
    },
    get upstreamRequests() {
      return upstreamRequests;
    },
    eventFor: (id) => events.find((e) => e.id === id),
    async waitForEvent(id, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const e = events.find((x) => x.id === id);
        if (e) return e;
        if (Date.now() > until) throw new Error(`no usage event for ${id}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async waitForRefusal(id, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const e = refusals.find((x) => x.id === id);
        if (e) return e;
        if (Date.now() > until) throw new Error(`no refusal event for ${id}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      await proxy.close();
      await channel.close().catch(() => {});
      await conn.close().catch(() => {});
      await Promise.all([sim.close(), billing.close(), keys.close()]);
      await amqpInfo.cleanup({
        queues: [topology.queue, topology.deadLetterQueue],
        exchanges: [topology.exchange, topology.deadLetterExchange],
      });
    },
  };
  return stack;
}

export const bearer = (key: { key: string } | string) => ({
  authorization: `Bearer ${typeof key === 'string' ? key : key.key}`,
  'content-type': 'application/json',
});
