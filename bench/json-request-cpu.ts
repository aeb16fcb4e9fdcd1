/**
 * What the proxy's own JavaScript costs per non-streamed request, part by part, as CPU time of this
 * process (process.cpuUsage: user + system, so a socket write's system time counts) in an
 * interleaved A/B — load-independent enough for a shared 2-core machine (issue 30).
 *
 *   pnpm exec tsx bench/json-request-cpu.ts      (REDIS_URL, default redis://127.0.0.1:6379)
 *   JSON_CPU_ROUNDS=40 JSON_CPU_BLOCK=500 JSON_CPU_PARTS=admission,event JSON_CPU_CONCURRENCY=1,8
 *
 * admission: the real spend guard (@tollgate/spend createRedisSpendGuard) on a loaded key and prepaid
 *   account, against the real Redis: admit (the settles of earlier requests riding in its write),
 *   then settle, fire-and-forget, as Completion does. One request at a time per worker, with
 *   JSON_CPU_CONCURRENCY workers (1: a moderate rate, nothing shared; 8: a busy proxy). Per variant of
 *   the proxy's Redis client: `auto-pipelined` (ioredis enableAutoPipelining, before), `corked`
 *   (@tollgate/redis batchWrites, CorkedRedis: the proxy's client now), `plain` (one write per
 *   command, for reference). Also socket writes per request. Its own key prefix, deleted at the end.
 * event: a non-streamed completion's usage event as Completion.finish builds it and the publisher
 *   serialises it (usageEventOf, then Buffer.from(JSON.stringify)), with the alternatives tried.
 *
 * Each round runs every variant once on a block of requests, in a rotated order; the figure is the
 * median over rounds of CPU µs per request (and p25–p75).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { devServiceSigner } from '@tollgate/auth';
import { toUnits } from '@tollgate/money';
import { createRedisSpendGuard, createSpendStore } from '@tollgate/spend';
import { createRedisClient, type RedisClient, whenReady } from '../packages/redis/src/index';
import { eventBenchVariants } from './support/usage-event-fixture';

const ROUNDS = Number(process.env.JSON_CPU_ROUNDS ?? 40);
const BLOCK = Number(process.env.JSON_CPU_BLOCK ?? 500);
const PARTS = (process.env.JSON_CPU_PARTS ?? 'admission,event').split(',');
const CONCURRENCY = (process.env.JSON_CPU_CONCURRENCY ?? '1,8').split(',').map(Number);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * (s.length - 1)))] as number;
};

export interface Variant {
  name: string;
  /** Runs `n` requests; resolves when done. */
  run(n: number): Promise<void> | void;
  /** Socket writes so far (each one system call: `write` or `writev`), when counted. */
  writes?: () => number;
}

async function interleave(title: string, variants: Variant[], block: number): Promise<void> {
  for (const v of variants) await v.run(block); // warm-up
  const cpu = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const writes = new Map<string, number>(variants.map((v) => [v.name, 0]));
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(i + r) % variants.length] as Variant;
      const w = v.writes?.() ?? 0;
      const before = cpuUs();
      await v.run(block);
      cpu.get(v.name)?.push((cpuUs() - before) / block);
      writes.set(v.name, (writes.get(v.name) ?? 0) + (v.writes?.() ?? 0) - w);
    }
  }
  console.log(`\n${title} — CPU µs per request, median (p25–p75) of ${ROUNDS} rounds × ${block}`);
  for (const v of variants) {
    const xs = cpu.get(v.name) as number[];
    const f = (x: number) => x.toFixed(2);
    const w = v.writes ? `  writes/request ${((writes.get(v.name) ?? 0) / (ROUNDS * block)).toFixed(3)}` : '';
    console.log(
      `  ${v.name.padEnd(16)} ${f(quantile(xs, 0.5)).padStart(8)}  (${f(quantile(xs, 0.25))}–${f(quantile(xs, 0.75))})${w}`,
    );
  }
}

/** Counts the socket writes of a connected node client: Node's stream calls `_write` or `_writev` once per system call. */
function writeCounter(redis: RedisClient): () => number {
  const socket = (redis as unknown as { stream: Record<string, (...a: unknown[]) => unknown> }).stream;
  let n = 0;
  for (const m of ['_write', '_writev'] as const) {
    const original = socket[m]?.bind(socket);
    if (original)
      socket[m] = (...a: unknown[]) => {
        n++;
        return original(...a);
      };
  }
  return () => n;
}

/** A spend guard on `redis` over a loaded key (daily limit) and prepaid account of its own. */
async function admissionVariant(
  name: string,
  redis: RedisClient,
  prefix: string,
  concurrency: number,
): Promise<Variant> {
  const accountId = randomUUID();
  const keyId = randomUUID();
  const now = Date.now();
  const store = createSpendStore(redis, { prefix });
  const day = `d${new Date(now).toISOString().slice(0, 10)}`;
  await store.beginRebuild({ keyId, accountId }, now);
  await store.loadKey(accountId, keyId, now, { d: day, w: 'w2026-W48', m: 'm2026-11' }, [
    [day, toUnits('12.5')],
  ]);
  await store.loadAccount(accountId, now, {
    usageUnits: toUnits('12.5'),
    creditsUnits: toUnits('1000000'),
    postpaid: false,
    version: 1,
  });
  const guard = createRedisSpendGuard({
    redis,
    prefix,
    billingUrl: 'http://127.0.0.1:9',
    signer: devServiceSigner('proxy'),
  });
  const key = {
    id: keyId,
    accountId,
    scope: 'inference' as const,
    disabled: false,
    revoked: false,
    limit: '1000000',
    limitReset: 'daily' as const,
    version: 1,
  };
  let seq = 0;
  const one = async () => {
    const requestId = `gen-${Math.floor(now / 1000)}-${(seq++).toString(36).padStart(20, '0')}`;
    const reservation = await guard.admit({ key, worstCaseCostUnits: toUnits('0.0123'), requestId });
    if (!reservation) throw new Error(`${name}: not held`);
    // Fire-and-forget, as Completion.end does: it rides with a later admission.
    void guard.settle(reservation, toUnits('0.0012'));
  };
  const worker = async (n: number) => {
    for (let i = 0; i < n; i++) await one();
  };
  return {
    name,
    async run(n) {
      await Promise.all(Array.from({ length: concurrency }, () => worker(Math.ceil(n / concurrency))));
      await guard.flush?.();
    },
    writes: writeCounter(redis),
  };
}

async function admission(concurrency: number): Promise<void> {
  const prefix = `bench-jsoncpu-${process.pid}:`;
  const common = { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 };
  const clients: Array<[string, RedisClient]> = [
    ['auto-pipelined', createRedisClient({ url: REDIS_URL }, { ...common, enableAutoPipelining: true })],
    ['corked', createRedisClient({ url: REDIS_URL }, { ...common, batchWrites: true })],
    ['plain', createRedisClient({ url: REDIS_URL }, common)],
  ];
  for (const [name, c] of clients)
    if (!(await whenReady(c, 5_000))) throw new Error(`${name}: Redis not ready`);
  const variants: Variant[] = [];
  for (const [name, c] of clients) variants.push(await admissionVariant(name, c, prefix, concurrency));
  await interleave(`admission (admit + riding settle), ${concurrency} at a time`, variants, BLOCK);
  const redis = clients[0]?.[1] as RedisClient;
  const names = await redis.keys(`${prefix}*`);
  if (names.length > 0) await redis.del(...names);
  for (const [, c] of clients) c.disconnect();
}

console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
if (PARTS.includes('admission')) for (const c of CONCURRENCY) await admission(c);
if (PARTS.includes('event')) {
  const { variants, sink } = eventBenchVariants();
  await interleave('usage event (build + serialise)', variants, BLOCK * 10);
  console.log(`  (${sink()} bytes made)`);
}
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
