/**
 * Child process of bench/proxy-latency.ts: runs one side of the benchmark so the load generator,
 * the simulator and the proxy never share an event loop.
 *   role=sim    the provider simulator
 *   role=proxy  keys service (fresh database, own Redis prefix) + the proxy, one inference key
 *   role=mini   control: a minimal pass-through proxy (node:http + the proxy's undici Pool settings,
 *               model rewritten, response parsed and re-serialised; no auth/Redis/AMQP/express)
 *   role=mini-redis  the same + one key-cache HMGET (a real cached record) per request
 * Reports `{url, key?}` to the parent over IPC, stops on SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadCatalog } from '@tollgate/catalog';
import { startTestKeysService } from '@tollgate/keys/testing';
import { startProviderSim } from '@tollgate/provider-sim';
import type { Redis } from 'ioredis';
import { createKeyCache } from '../packages/key-cache/src/index';
import { CorkedRedis } from '../packages/redis/src/index';
import { DEFAULT_CATALOG_PATH, loadConfig } from '../services/proxy/src/config';
import { startProxy } from '../services/proxy/src/http/app';
import { Upstreams } from '../services/proxy/src/upstream/upstream';

process.env.TOLLGATE_TEST_RUN ??= `bench${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const role = process.argv[2];
const send = (msg: object) => process.send?.(msg);
// CPU time of this process, for the parent's contention-independent "CPU per request" figure.
// BENCH_LOOP_DELAY=1: event-loop delay histogram (a 1 ms timer: not free, so opt-in).
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
if (process.env.BENCH_LOOP_DELAY === '1') loopDelay.enable();
process.on('message', (msg: { cmd?: string }) => {
  if (msg?.cmd === 'cpu') send({ cpu: process.cpuUsage() });
  if (msg?.cmd === 'eld') {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    send({
      eld: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
    });
    loopDelay.reset();
  }
});

if (role === 'sim') {
  const sim = await startProviderSim({ port: 0 });
  send({ url: sim.url });
  process.once('SIGTERM', () => void sim.close().then(() => process.exit(0)));
} else if (role === 'proxy') {
  const simUrl = process.env.PROVIDER_SIM_URL;
  if (!simUrl) throw new Error('PROVIDER_SIM_URL is required');
  const keys = await startTestKeysService();
  const key = await keys.createKey(keys.account.id, { name: 'bench' });
  const config = loadConfig({
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL: keys.redis.url,
    REDIS_PREFIX: keys.redis.prefix,
    KEYS_URL: keys.url,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    // No billing service in this benchmark: spend counters could not be rebuilt.
    SPEND_GUARD: 'off',
  });
  const catalog = loadCatalog(DEFAULT_CATALOG_PATH, { ...process.env, PROVIDER_SIM_URL: simUrl });
  // BENCH_PUBLISHER=none: a publisher that drops events (isolates the broker's CPU from the proxy's).
  const publisher =
    process.env.BENCH_PUBLISHER === 'none'
      ? {
          publish() {},
          canAdmit: () => true,
          stats: () => ({
            buffered: 0,
            published: 0,
            dropped: 0,
            connected: true,
            unroutable: 0,
            spooled: 0,
            spoolBytes: 0,
            blocked: false,
          }),
          flush: async () => true,
          close: async () => ({ drained: true, remaining: 0 }),
        }
      : undefined;
  const proxy = await startProxy(config, { catalog, publisher });
  send({ url: proxy.url, key: key.key });
  process.once('SIGTERM', () => {
    void (async () => {
      await proxy.close();
      await keys.close();
      process.exit(0);
    })();
  });
} else if (role === 'mini' || role === 'mini-redis') {
  const simUrl = process.env.PROVIDER_SIM_URL;
  if (!simUrl) throw new Error('PROVIDER_SIM_URL is required');
  // Same Pool options as the proxy (services/proxy/src/upstream/upstream.ts).
  const upstreams = new Upstreams({ timeoutMs: 60_000 });
  const target = upstreams.target({ name: 'sim', baseUrl: `${simUrl}/v1` });
  let redis: Redis | undefined;
  let lookup = async () => {};
  if (role === 'mini-redis') {
    // Same client options as the proxy; a real cached record under a throw-away prefix.
    redis = new CorkedRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
    });
    await new Promise((r) => redis?.once('ready', r));
    const cache = createKeyCache(redis, {
      prefix: `${process.env.TOLLGATE_TEST_RUN}:`,
      recordTtlSeconds: 3600,
    });
    const digest = randomBytes(32).toString('hex');
    await cache.fill(digest, {
      id: 'k1',
      accountId: 'a1',
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: null,
      limitReset: null,
      version: 1,
    });
    lookup = async () => {
      const hit = await cache.get(digest);
      if (hit.state !== 'hit') throw new Error(`key cache ${hit.state}`);
    };
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        try {
          await lookup();
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
          body.model = 'gpt-4o-mini';
          const up = await target.pool.request({
            method: 'POST',
            path: target.path,
            headers: target.headers,
            body: JSON.stringify(body),
          });
          const json = (await up.body.json()) as Record<string, unknown>;
          json.model = 'openai/gpt-4o-mini';
          res.writeHead(up.statusCode, { 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify(json));
        } catch (err) {
          res.writeHead(502).end(String(err));
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  send({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void Promise.allSettled([upstreams.close(), redis?.quit()]).then(() => process.exit(0));
  });
} else {
  throw new Error(`unknown role ${role}`);
}
