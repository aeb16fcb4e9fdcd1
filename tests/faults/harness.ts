/**
 * The fault suite's stack: provider-sim, keys, billing and proxy as separate processes (spawned like
 * `infra/dev/run.ts` does, `node --import tsx src/main.ts`), pointed at an isolated database, Redis
 * prefix and RabbitMQ names of the test kit — optionally through TCP fault proxies — plus a load
 * generator and the reconciliation every scenario ends with.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { devServiceSigner, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { topologyNames, usageTopology } from '@tollgate/events';
import { loadConfig as loadKeysConfig, startKeysService } from '@tollgate/keys';
import { toUnits } from '@tollgate/money';
import {
  createTestAmqp,
  createTestDatabase,
  createTestRedis,
  freePort,
  type TestAmqp,
  type TestDatabase,
  type TestRedis,
} from '@tollgate/testkit';
import amqplib from 'amqplib';
import pg from 'pg';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
export const MODEL = 'openai/gpt-4o-mini';
/**
 * Limit of every third key: a handful of requests' worth, so those keys reach it under load.
 * `FAULTS_KEY_LIMIT` raises it so a limited key still has room when a fault strikes mid-scenario.
 */
const LIMIT = process.env.FAULTS_KEY_LIMIT ?? '0.0002';
/**
 * How long a service process may take to answer /healthz after its start: its start (tsx compiling
 * its sources) took over 60 s, the old limit, on a loaded host (load average 49).
 */
const START_WITHIN_MS = 180_000;

type ServiceName = 'provider-sim' | 'keys' | 'billing' | 'proxy';

export interface ServiceProcess {
  name: string;
  port: number;
  url: string;
  child: ChildProcess;
  /** Last lines of its output (for failure messages). */
  tail: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function spawnService(
  service: ServiceName,
  env: Record<string, string>,
  options: { port?: number; label?: string; openFiles?: number } = {},
): Promise<ServiceProcess> {
  const port = options.port ?? (await freePort());
  const node = [process.execPath, '--import', 'tsx', 'src/main.ts'];
  // `openFiles`: the child's soft limit of open files raised (to at most the hard limit) first.
  const [file, ...args] = options.openFiles
    ? ['bash', '-c', `ulimit -n ${options.openFiles} && exec "$@"`, 'bash', ...node]
    : node;
  const child = spawn(file as string, args, {
    cwd: resolve(root, 'services', service),
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (process.env.FAULTS_VERBOSE) process.stdout.write(`${options.label ?? service}| ${line}\n`);
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  const proc = { name: options.label ?? service, port, url, child, tail, exited };
  const deadline = Date.now() + START_WITHIN_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${service} exited during start:\n${tail.join('\n')}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${service} not up within ${START_WITHIN_MS / 1000} s:\n${tail.join('\n')}`);
    await sleep(100);
  }
  return proc;
}

export async function stopService(p: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill(signal);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
  await p.exited;
  clearTimeout(timer);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FaultStackOptions {
  /** AMQP_URL the proxy and billing use (e.g. through a TCP fault proxy). Default the test kit's. */
  amqpUrl?: (base: string) => string;
  /** DATABASE_URL billing uses. */
  billingDatabaseUrl?: (base: string) => string;
  /** REDIS_URL of every service (e.g. a private redis-server, or a TCP fault proxy in front of it). */
  redisUrl?: string;
  /**
   * Admin URL of the Postgres server of the whole stack (keys, billing, the reconciliation), e.g. a
   * private cluster; a database is created on it. Default: the test kit's server.
   */
  postgresUrl?: string;
  billingEnv?: Record<string, string>;
  proxyEnv?: Record<string, string>;
  /** Soft limit of open files of the proxy process (raised with `ulimit -n` before it starts). */
  proxyOpenFiles?: number;
  /** USAGE_PARTITIONS of every service (default 1: the single usage queue). */
  usagePartitions?: number;
}

export interface KeyUnderTest {
  key: string;
  id: string;
  accountId: string;
  /** USD limit (decimal string), or null. */
  limit: string | null;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** The simulator's request options (delays, lengths: services/provider-sim request.ts). */
  sim?: Record<string, unknown>;
  /** Called when the response headers arrive (a stream is open). */
  onHeaders?: (status: number) => void;
}

export interface Outcome {
  status: number;
  streamed: boolean;
  /** The request id (`gen-…`) of a 200. */
  id?: string;
  /** Cost the response carried (usage.cost), as sent. */
  cost?: string;
  keyId: string;
  /** A stream that ended with the error chunk. */
  errorChunk?: boolean;
  /** A stream that ended with `data: [DONE]`. */
  done?: boolean;
  /** A refusal's body (its error envelope) and Retry-After, kept for the report. */
  refusal?: string;
  /** fetch failed (connection reset by a killed proxy…). */
  transportError?: string;
  /** When the request was sent and when its answer was complete (epoch ms). */
  startedAt: number;
  endedAt: number;
}

export class FaultStack {
  db!: TestDatabase;
  redis!: TestRedis;
  amqp!: TestAmqp;
  pool!: pg.Pool;
  spoolDir = mkdtempSync(join(tmpdir(), 'tollgate-spool-'));
  sim!: ServiceProcess;
  keysSvc!: ServiceProcess;
  keysPort = 0;
  billing: ServiceProcess[] = [];
  proxy!: ServiceProcess;
  proxyPort = 0;
  /** The proxy's metrics listener (METRICS_PORT; every other service picks a free one). */
  proxyMetricsPort = 0;
  /** The first billing worker's metrics listener. */
  billingMetricsPort = 0;
  keys: KeyUnderTest[] = [];
  /** Keys revoked and disabled before the load: never admitted, whatever happens to Redis. */
  blockedKeys: KeyUnderTest[] = [];
  env: Record<string, string> = {};

  constructor(readonly options: FaultStackOptions = {}) {}

  async start(): Promise<void> {
    [this.db, this.redis] = await Promise.all([
      this.options.postgresUrl ? createDatabaseOn(this.options.postgresUrl) : createTestDatabase(),
      createTestRedis(),
    ]);
    this.amqp = createTestAmqp();
    this.pool = new pg.Pool({ connectionString: this.db.url, max: 3 });
    this.pool.on('error', () => {});
    this.env = {
      LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'warn',
      REDIS_URL: this.options.redisUrl ?? this.redis.url,
      REDIS_PREFIX: this.redis.prefix,
      DATABASE_URL: this.db.url,
      AMQP_PREFIX: this.amqp.prefix,
      AMQP_URL: this.options.amqpUrl?.(this.amqp.url) ?? this.amqp.url,
      METRICS_PORT: '0',
      USAGE_PARTITIONS: String(this.options.usagePartitions ?? 1),
    };
    this.sim = await spawnService('provider-sim', {
      ...this.env,
      SIM_TTFT_MS: '20',
      SIM_INTER_TOKEN_MS: '5',
    });
    // Billing asks keys who owns a key and keys asks billing for usage: keys' port is fixed first.
    this.keysPort = await freePort();
    await this.startBilling();
    this.keysSvc = await spawnService(
      'keys',
      {
        ...this.env,
        BILLING_URL: this.billing[0]?.url ?? '',
        LAST_USED_FLUSH_MS: '500',
      },
      { port: this.keysPort },
    );
    this.proxyPort = await freePort();
    this.proxyMetricsPort = await freePort();
    await this.startProxy();
  }

  billingEnv(): Record<string, string> {
    return {
      ...this.env,
      DATABASE_URL: this.options.billingDatabaseUrl?.(this.db.url) ?? this.db.url,
      KEYS_URL: `http://127.0.0.1:${this.keysPort}`,
      BATCH_TIMEOUT_MS: '20',
      BATCH_SIZE: '50',
      PREFETCH: '200',
      ...this.options.billingEnv,
    };
  }

  async startBilling(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    const port = this.billing[0]?.port;
    if (this.billing.length === 0) this.billingMetricsPort = await freePort();
    const metrics: Record<string, string> =
      this.billing.length === 0 ? { METRICS_PORT: String(this.billingMetricsPort) } : {};
    const p = await spawnService(
      'billing',
      { ...this.billingEnv(), ...metrics, ...extra },
      { port: this.billing.length === 0 ? port : undefined, label: `billing${this.billing.length}` },
    );
    this.billing.push(p);
    return p;
  }

  /** Proxies started beside `proxy` by `startExtraProxy` (stopped by `close`). */
  extraProxies: ServiceProcess[] = [];

  /** One more proxy process with the same settings: its own port, metrics port and spool directory. */
  async startExtraProxy(): Promise<ServiceProcess> {
    const label = `proxy${this.extraProxies.length + 1}`;
    const p = await spawnService(
      'proxy',
      { ...this.proxyEnv(), METRICS_PORT: '0', SPOOL_DIR: join(this.spoolDir, label) },
      { label, openFiles: this.options.proxyOpenFiles },
    );
    this.extraProxies.push(p);
    return p;
  }

  async startProxy(): Promise<ServiceProcess> {
    this.proxy = await spawnService('proxy', this.proxyEnv(), {
      port: this.proxyPort,
      openFiles: this.options.proxyOpenFiles,
    });
    return this.proxy;
  }

  private proxyEnv(): Record<string, string> {
    return {
      ...this.env,
      KEYS_URL: this.keysSvc.url,
      BILLING_URL: this.billing[0]?.url ?? '',
      CATALOG_PATH: resolve(root, 'infra/catalog/dev.yaml'),
      PROVIDER_SIM_URL: this.sim.url,
      SPOOL_DIR: this.spoolDir,
      SHUTDOWN_TIMEOUT_MS: '20000',
      UPSTREAM_TIMEOUT_MS: '20000',
      MAX_CONCURRENT_COMPLETIONS_PER_KEY: '1000',
      MAX_CONCURRENT_COMPLETIONS_PER_ACCOUNT: '1000',
      METRICS_PORT: String(this.proxyMetricsPort),
      ...this.options.proxyEnv,
    };
  }

  private adminHandle: Awaited<ReturnType<typeof startKeysService>> | null = null;
  /** Accounts created by createKeys. */
  accounts: Array<{ id: string }> = [];

  /**
   * The admin CLI's path: the keys service's own code (in this process) against the same database
   * and Redis. Kept open for the scenario, so key changes can be made during a fault.
   */
  async admin() {
    this.adminHandle ??= await startKeysService(
      loadKeysConfig({
        ...this.env,
        LOG_LEVEL: 'silent',
        PORT: '0',
        HOST: '127.0.0.1',
        BILLING_URL: this.billing[0]?.url ?? '',
      }),
    );
    return this.adminHandle.runtime;
  }

  /** Accounts and keys: `count` keys over two accounts; every third key has a limit near its spend. */
  async createKeys(count: number, credits = '1000', accounts = 2): Promise<KeyUnderTest[]> {
    const runtime = await this.admin();
    for (let a = 0; a < accounts; a++) {
      const slug = `faults-${randomBytes(4).toString('hex')}`;
      const account = await runtime.accounts.create({ slug, name: slug });
      await this.addCredits(account.id, credits);
      this.accounts.push(account);
    }
    for (let i = 0; i < count; i++) {
      const account = this.accounts[i % this.accounts.length] as { id: string };
      const limit = i % 3 === 2 ? LIMIT : null;
      const { row, key } = await runtime.keys.create(account.id, {
        name: `load-${i}`,
        scope: 'inference',
        limit,
        limitReset: null,
      });
      this.keys.push({ key, id: row.id, accountId: account.id, limit });
    }
    for (const how of ['revoked', 'disabled'] as const) {
      const account = this.accounts[0] as { id: string };
      const { row, key } = await runtime.keys.create(account.id, { name: how, scope: 'inference' });
      if (how === 'revoked') await runtime.keys.revoke(account.id, row.id);
      else await runtime.keys.update(account.id, row.id, { disabled: true });
      this.blockedKeys.push({ key, id: row.id, accountId: account.id, limit: null });
    }
    return this.keys;
  }

  /** One more key without a limit (not in the load's round robin), on the first account. */
  async extraKey(name: string): Promise<KeyUnderTest> {
    const runtime = await this.admin();
    const account = this.accounts[0] as { id: string };
    const { row, key } = await runtime.keys.create(account.id, { name, scope: 'inference' });
    return { key, id: row.id, accountId: account.id, limit: null };
  }

  async revoke(k: KeyUnderTest): Promise<void> {
    await (await this.admin()).keys.revoke(k.accountId, k.id);
  }

  async disable(k: KeyUnderTest): Promise<void> {
    await (await this.admin()).keys.update(k.accountId, k.id, { disabled: true });
  }

  async addCredits(accountId: string, amount: string) {
    const token = await devServiceSigner('admin').sign('billing'); // the admin CLI's identity
    const res = await fetch(`${this.billing[0]?.url}/internal/accounts/${accountId}/credits`, {
      method: 'POST',
      headers: { [SERVICE_TOKEN_HEADER]: token, 'content-type': 'application/json' },
      body: JSON.stringify({ amount, note: 'fault suite' }),
    });
    if (!res.ok) throw new Error(`credits: HTTP ${res.status} ${await res.text()}`);
  }

  /** One chat completion through the proxy; records what the client saw. */
  async request(k: KeyUnderTest, streamed: boolean, options: RequestOptions = {}): Promise<Outcome> {
    const o: Outcome = { status: 0, streamed, keyId: k.id, startedAt: Date.now(), endedAt: 0 };
    try {
      return await this.send(k, streamed, o, options);
    } finally {
      o.endedAt = Date.now();
    }
  }

  private async send(
    k: KeyUnderTest,
    streamed: boolean,
    o: Outcome,
    options: RequestOptions,
  ): Promise<Outcome> {
    const { signal, sim, onHeaders } = options;
    try {
      const res = await fetch(`http://127.0.0.1:${this.proxyPort}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          stream: streamed,
          max_tokens: typeof sim?.completion_tokens === 'number' ? sim.completion_tokens : 24,
          messages: [{ role: 'user', content: `fault suite ${randomBytes(4).toString('hex')}` }],
          ...(sim ? { sim } : {}),
        }),
        signal,
      });
      o.status = res.status;
      onHeaders?.(res.status);
      const text = await res.text();
      if (res.status !== 200) {
        const retryAfter = res.headers.get('retry-after');
        o.refusal = `${text.slice(0, 300)}${retryAfter === null ? '' : ` (Retry-After: ${retryAfter})`}`;
        return o;
      }
      if (!streamed) {
        const body = JSON.parse(text) as { id: string; usage?: { cost?: number | string } };
        o.id = body.id;
        o.cost = body.usage?.cost === undefined ? undefined : String(body.usage.cost);
        return o;
      }
      for (const line of text.split('\n')) {
        if (line === 'data: [DONE]') o.done = true;
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const chunk = JSON.parse(line.slice(6)) as {
          id?: string;
          usage?: { cost?: number | string };
          error?: unknown;
        };
        if (chunk.id) o.id = chunk.id;
        if (chunk.usage?.cost !== undefined) o.cost = String(chunk.usage.cost);
        if (chunk.error) o.errorChunk = true;
      }
      return o;
    } catch (err) {
      o.transportError = (err as Error).message;
      return o;
    }
  }

  /**
   * Generated load: `concurrency` clients sending requests (half streamed) round-robin over the keys
   * until `until()` is true. Returns every outcome.
   */
  async load(options: {
    concurrency: number;
    until: () => boolean;
    pauseMs?: number;
    /** Called with each outcome as it completes. */
    onOutcome?: (o: Outcome) => void;
  }): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let n = 0;
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (!options.until()) {
          const i = n++;
          const k = this.keys[i % this.keys.length] as KeyUnderTest;
          const o = await this.request(k, i % 2 === 0);
          outcomes.push(o);
          options.onOutcome?.(o);
          if (options.pauseMs) await sleep(options.pauseMs);
        }
      }),
    );
    return outcomes;
  }

  /** The usage topology of this stack (its USAGE_PARTITIONS). */
  topology() {
    return usageTopology(this.amqp.prefix, this.options.usagePartitions ?? 1);
  }

  /** Messages in the usage queues (every partition's, summed) and in the dead-letter queue. */
  async queueDepths(): Promise<{ queue: number; dead: number }> {
    const t = this.topology();
    const conn = await amqplib.connect(this.amqp.url);
    conn.on('error', () => {});
    try {
      let queue = 0;
      for (const p of t.partitions) {
        // A failed check closes the channel: one channel per check.
        const ch = await conn.createChannel();
        ch.on('error', () => {});
        queue += (await ch.checkQueue(p.queue).catch(() => ({ messageCount: 0 }))).messageCount;
      }
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      const d = await ch.checkQueue(t.deadLetterQueue).catch(() => ({ messageCount: 0 }));
      return { queue, dead: d.messageCount };
    } finally {
      await conn.close().catch(() => {});
    }
  }

  async proxyMetric(name: string): Promise<number | null> {
    try {
      const text = await (await fetch(`http://127.0.0.1:${this.proxyMetricsPort}/metrics`)).text();
      const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
      return m ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  /**
   * Waits until every served request is recorded (or `timeoutMs`), then reconciles. Returns the
   * figures; `recoveryMs` counts from `since` to the moment the last record appeared.
   */
  async reconcile(outcomes: Outcome[], since: number, timeoutMs = 90_000): Promise<Figures> {
    const served = outcomes.filter((o) => o.status === 200 && o.id);
    const ids = served.map((o) => o.id as string);
    const deadline = Date.now() + timeoutMs;
    let rows: Array<{
      id: string;
      key_id: string;
      account_id: string;
      total_cost: string;
      created_at: Date;
      finished_at: Date;
    }> = [];
    for (;;) {
      rows = (
        await this.pool.query(
          'select id, key_id, account_id, total_cost, created_at, finished_at from billing.generations',
        )
      ).rows;
      const have = new Set(rows.map((r) => r.id));
      const missing = ids.filter((id) => !have.has(id));
      const depths = await this.queueDepths();
      const spooled = (await this.proxyMetric('tollgate_proxy_publisher_spooled_events')) ?? 0;
      if (missing.length === 0 && depths.queue === 0 && spooled === 0) break;
      if (Date.now() > deadline) break;
      await sleep(250);
    }
    const recoveryMs = Date.now() - since;
    const byId = new Map(rows.map((r) => [r.id, r]));
    let lost = 0;
    let wrongCost = 0;
    const lostDetail: string[] = [];
    for (const o of served) {
      const r = byId.get(o.id as string);
      if (!r) {
        lost++;
        lostDetail.push(
          `${o.id} ${o.streamed ? 'streamed' : 'json'} sent ${o.startedAt - since} ms, answered ${o.endedAt - since} ms after the fault`,
        );
      } else if (o.cost === undefined || toUnits(r.total_cost) !== toUnits(o.cost)) wrongCost++;
    }
    const servedIds = new Set(ids);
    // Records of requests whose answer the client never saw (a killed proxy, a reset connection)
    // are legitimate; any other record is unexplained.
    const unseen = outcomes.filter((o) => o.status !== 200 || !o.id).length;
    const extra = rows.filter((r) => !servedIds.has(r.id)).length;
    const idCounts = new Map<string, number>();
    for (const id of ids) idCounts.set(id, (idCounts.get(id) ?? 0) + 1);
    const duplicatedResponses = [...idCounts.values()].filter((n) => n > 1).length;

    // Sums: key spend (all-time) and account usage equal the sums of the records.
    const sumBy = (field: 'key_id' | 'account_id') => {
      const m = new Map<string, bigint>();
      for (const r of rows) m.set(r[field], (m.get(r[field]) ?? 0n) + toUnits(r.total_cost));
      return m;
    };
    const keySums = sumBy('key_id');
    const accountSums = sumBy('account_id');
    const keySpend = (
      await this.pool.query<{ key_id: string; amount: string }>(
        `select key_id, amount from billing.key_spend where period = 'all'`,
      )
    ).rows;
    const accountUsage = (
      await this.pool.query<{ account_id: string; amount: string }>(
        'select account_id, amount from billing.account_usage',
      )
    ).rows;
    let sumMismatches = 0;
    for (const r of keySpend) if ((keySums.get(r.key_id) ?? 0n) !== toUnits(r.amount)) sumMismatches++;
    for (const r of accountUsage)
      if ((accountSums.get(r.account_id) ?? 0n) !== toUnits(r.amount)) sumMismatches++;
    if (keySpend.length !== keySums.size || accountUsage.length !== accountSums.size) sumMismatches++;
    let overshot = 0;
    const overshotDetail: string[] = [];
    for (const k of this.keys) {
      if (k.limit === null) continue;
      const spent = keySums.get(k.id) ?? 0n;
      if (spent > toUnits(k.limit)) {
        overshot++;
        // When the key's records were created and finished (ms after `since`): which fault let it through.
        const times = rows
          .filter((r) => r.key_id === k.id)
          .map((r) => `${r.created_at.getTime() - since}/${r.finished_at.getTime() - since}`);
        overshotDetail.push(
          `key ${k.id}: spent ${spent} units > limit ${toUnits(k.limit)} (${times.length} records, created/finished ms after the fault: ${times.join(' ')})`,
        );
      }
    }
    const depths = await this.queueDepths();
    const figures: Figures = {
      requests: outcomes.length,
      served: served.length,
      refused: outcomes.filter((o) => o.status !== 200 && o.status !== 0).length,
      refusedByStatus: countBy(
        outcomes.filter((o) => o.status !== 200 && o.status !== 0).map((o) => o.status),
      ),
      transportErrors: outcomes.filter((o) => o.status === 0).length,
      errorChunks: served.filter((o) => o.errorChunk).length,
      lost,
      duplicated: duplicatedResponses,
      wrongCost,
      unexplainedRecords: Math.max(0, extra - unseen),
      recordsOfUnseenAnswers: Math.min(extra, unseen),
      sumMismatches,
      overshot,
      queue: depths.queue,
      dlq: depths.dead,
      spooled: (await this.proxyMetric('tollgate_proxy_publisher_spooled_events')) ?? -1,
      recoveryMs,
      lostDetail,
      overshotDetail,
      unexpectedRefusals: outcomes
        .filter((o) => o.status !== 200 && o.status !== 0 && !LIMIT_STATUSES.includes(o.status))
        .map(
          (o) =>
            `${o.status} ${o.streamed ? 'streamed' : 'json'} key ${o.keyId} sent ${o.startedAt - since} ms, ` +
            `answered ${o.endedAt - since} ms after the fault: ${o.refusal ?? ''}`,
        ),
    };
    return figures;
  }

  async close(): Promise<void> {
    await this.adminHandle?.close().catch(() => {});
    this.adminHandle = null;
    const all = [this.proxy, ...this.extraProxies, ...this.billing, this.keysSvc, this.sim].filter(
      Boolean,
    ) as ServiceProcess[];
    await Promise.all(all.map((p) => stopService(p, 'SIGTERM').catch(() => {})));
    await this.pool?.end().catch(() => {});
    await Promise.allSettled([
      this.redis?.cleanup(),
      this.db?.drop(),
      this.amqp ? this.amqp.cleanup(topologyNames(this.topology())) : undefined,
    ]);
    rmSync(this.spoolDir, { recursive: true, force: true });
  }
}

/** A fresh database on the Postgres server at `adminUrl` (a private cluster), dropped with it. */
async function createDatabaseOn(adminUrl: string): Promise<TestDatabase> {
  const name = `tgt_faults_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

export interface Figures {
  requests: number;
  served: number;
  refused: number;
  refusedByStatus: Record<string, number>;
  transportErrors: number;
  errorChunks: number;
  lost: number;
  duplicated: number;
  wrongCost: number;
  unexplainedRecords: number;
  recordsOfUnseenAnswers: number;
  sumMismatches: number;
  overshot: number;
  queue: number;
  dlq: number;
  spooled: number;
  recoveryMs: number;
  /** Each lost answer: its id, kind, and when it was sent and answered relative to `since`. */
  lostDetail: string[];
  /** Each key over its limit: its spend, limit and the times of its records relative to `since`. */
  overshotDetail: string[];
  /**
   * Each refusal other than a limit's (402, 403, 429): its status, kind, key, when it was sent and
   * answered relative to `since`, and its body (which refusal it was) and Retry-After.
   */
  unexpectedRefusals: string[];
}

/** The statuses of a key or account at its limit: the only refusals a load near its limits expects. */
const LIMIT_STATUSES = [402, 403, 429];

const countBy = (values: number[]) => {
  const m: Record<string, number> = {};
  for (const v of values) m[v] = (m[v] ?? 0) + 1;
  return m;
};

/** Refusals other than a limit's printed in full per scenario (some scenarios expect hundreds). */
const REFUSALS_SHOWN = 10;

/** Prints a scenario's figures (the issue's note quotes them). */
export function report(scenario: string, f: Figures): void {
  process.stdout.write(
    `\n[faults] ${scenario}: served=${f.served} refused=${f.refused} ${JSON.stringify(f.refusedByStatus)} ` +
      `transportErrors=${f.transportErrors} errorChunks=${f.errorChunks} lost=${f.lost} duplicated=${f.duplicated} ` +
      `wrongCost=${f.wrongCost} unexplained=${f.unexplainedRecords} sumMismatches=${f.sumMismatches} ` +
      `overshot=${f.overshot} queue=${f.queue} dlq=${f.dlq} spooled=${f.spooled} recovery=${f.recoveryMs}ms\n` +
      f.lostDetail.map((d) => `[faults]   LOST ${d}\n`).join('') +
      f.overshotDetail.map((d) => `[faults]   OVERSHOT ${d}\n`).join('') +
      f.unexpectedRefusals
        .slice(0, REFUSALS_SHOWN)
        .map((d) => `[faults]   REFUSED ${d}\n`)
        .join('') +
      (f.unexpectedRefusals.length > REFUSALS_SHOWN
        ? `[faults]   REFUSED … and ${f.unexpectedRefusals.length - REFUSALS_SHOWN} more\n`
        : ''),
  );
}
