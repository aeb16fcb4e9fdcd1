/**
 * Proxy latency benchmark: the provider simulator directly vs the same simulator through the proxy
 * (auth via the Redis key cache, catalog, undici pool, usage event published to RabbitMQ).
 *
 *   pnpm exec tsx bench/proxy-latency.ts            (BENCH_SECONDS=10 per run by default)
 *
 * Needs the local Postgres, Redis and RabbitMQ (like the tests). Starts the simulator and the keys
 * service + proxy in two child processes (the load generator runs here), then measures:
 *   1. non-streamed, autocannon: fixed 500 req/s and max throughput → p50/p99/req/s (1 ms resolution)
 *   2. non-streamed, precise open-loop client at 500 req/s (µs resolution, BENCH_ROUNDS interleaved
 *      rounds pooled) → p50/p99 and the added p99
 *   3. streamed, time to first byte: open loop at 500 req/s (same rounds), and closed loop at max
 *      throughput
 * Control variants (non-streamed scenarios only; see proxy-bench-server.ts), for attributing the cost:
 *   mini         minimal pass-through proxy (node:http + undici Pool, no auth/Redis/AMQP/express)
 *   mini-redis   the same + one key-cache HMGET per request
 *   proxy-nopub  the full proxy with BENCH_PUBLISHER=none (usage events dropped, no RabbitMQ)
 * Env: BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_RATE (500), BENCH_CONNECTIONS (32),
 *   BENCH_VARIANTS (comma list of the control variants above; default all, '' for none),
 *   BENCH_ONLY=precise (only the non-streamed fixed-rate rounds: quick experiments),
 *   BENCH_PIN=split (load generator on CPU 0, every server child on CPU 1, via taskset),
 *   BENCH_OUT (results file; default bench/results/proxy-latency.json).
 * Writes the results file and prints a table.
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { usageTopology } from '@tollgate/events';
import amqp from 'amqplib';
import autocannon from 'autocannon';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The fixed-rate precise runs are repeated, direct and proxy interleaved, and their samples pooled. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const MAX_CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const RESULTS =
  process.env.BENCH_OUT ?? fileURLToPath(new URL('./results/proxy-latency.json', import.meta.url));
const CONTROLS = ['mini', 'mini-redis', 'proxy-nopub'] as const;
type Control = (typeof CONTROLS)[number];
const VARIANTS = (process.env.BENCH_VARIANTS ?? CONTROLS.join(','))
  .split(',')
  .map((v) => v.trim())
  .filter((v) => v.length > 0) as Control[];
for (const v of VARIANTS) if (!CONTROLS.includes(v)) throw new Error(`unknown BENCH_VARIANTS entry ${v}`);
const ONLY_PRECISE = process.env.BENCH_ONLY === 'precise';
const PIN = process.env.BENCH_PIN ?? '';
if (PIN !== '' && PIN !== 'split') throw new Error(`BENCH_PIN must be 'split' or unset`);
const SERVER = fileURLToPath(new URL('./proxy-bench-server.ts', import.meta.url));

process.env.TOLLGATE_TEST_RUN ??= `bench${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const AMQP_PREFIX = `bench.${process.env.TOLLGATE_TEST_RUN}`;

const messages = [{ role: 'user', content: 'Hello! Summarise what a model gateway does in two sentences.' }];
const sim = { completion_tokens: 16 };
const body = (model: string, stream: boolean) => JSON.stringify({ model, messages, stream, sim });

interface Target {
  name: 'direct' | 'proxy' | Control;
  url: string;
  path: string;
  headers: Record<string, string>;
  model: string;
}

function startChild(
  role: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; info: { url: string; key?: string } }> {
  return new Promise((resolve, reject) => {
    const child = fork(SERVER, [role], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.once('message', (info) => {
      if (PIN === 'split' && child.pid) pin(child.pid, '1');
      resolve({ child, info: info as { url: string; key?: string } });
    });
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
}

/** Pins every thread of a process to a CPU list (taskset -a), e.g. '1'. */
function pin(pid: number, cpus: string) {
  execFileSync('taskset', ['-a', '-cp', cpus, String(pid)], { stdio: 'ignore' });
}

function cpuMicros(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (msg: { cpu?: { user: number; system: number } }) => {
      if (!msg?.cpu) return;
      child.off('message', onMessage);
      resolve(msg.cpu.user + msg.cpu.system);
    };
    child.on('message', onMessage);
    child.send({ cmd: 'cpu' });
  });
}

const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });

// ---------- autocannon ----------

interface CannonResult {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  rps: number;
  requests: number;
  errors: number;
  non2xx: number;
}

async function cannon(target: Target, stream: boolean, rate: number | undefined): Promise<CannonResult> {
  const result = await autocannon({
    url: target.url + target.path,
    method: 'POST',
    headers: target.headers,
    body: body(target.model, stream),
    connections: rate ? 50 : MAX_CONNECTIONS,
    overallRate: rate,
    duration: SECONDS,
  });
  return {
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    mean: result.latency.mean,
    rps: result.requests.average,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

// ---------- precise client (node:http keep-alive, hrtime) ----------

interface Sample {
  /** Request sent → first body byte (ms). */
  ttfb: number;
  /** Request sent → end of body (ms). */
  total: number;
  status: number;
}

function once(agent: http.Agent, target: Target, payload: string, scheduledAt: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const u = new URL(target.url + target.path);
    const req = http.request(
      {
        agent,
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: { ...target.headers, 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let ttfb = 0;
        res.on('data', () => {
          if (ttfb === 0) ttfb = performance.now() - scheduledAt;
        });
        res.on('end', () =>
          resolve({ ttfb, total: performance.now() - scheduledAt, status: res.statusCode ?? 0 }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

interface PreciseResult {
  p50: number;
  p90: number;
  p99: number;
  ttfbP50: number;
  ttfbP90: number;
  ttfbP99: number;
  rps: number;
  requests: number;
  errors: number;
}

function summarize(samples: Sample[], errors: number, seconds: number): PreciseResult {
  const ok = samples.filter((s) => s.status === 200);
  const totals = ok.map((s) => s.total).sort((a, b) => a - b);
  const ttfbs = ok.map((s) => s.ttfb).sort((a, b) => a - b);
  const r = (n: number) => Math.round(n * 1000) / 1000;
  return {
    p50: r(percentile(totals, 50)),
    p90: r(percentile(totals, 90)),
    p99: r(percentile(totals, 99)),
    ttfbP50: r(percentile(ttfbs, 50)),
    ttfbP90: r(percentile(ttfbs, 90)),
    ttfbP99: r(percentile(ttfbs, 99)),
    rps: Math.round(ok.length / seconds),
    requests: ok.length,
    errors: errors + samples.length - ok.length,
  };
}

/** Open loop: requests start on a fixed schedule (latency counted from the scheduled time). */
async function openLoopSamples(target: Target, stream: boolean, rate: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const payload = body(target.model, stream);
  const samples: Sample[] = [];
  let errors = 0;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  const total = rate * SECONDS;
  const interval = 1000 / rate;
  let sent = 0;
  while (sent < total) {
    const now = performance.now();
    const due = Math.min(total, Math.floor((now - start) / interval) + 1);
    while (sent < due) {
      const scheduledAt = start + sent * interval;
      inflight.push(
        once(agent, target, payload, scheduledAt).then(
          (s) => void samples.push(s),
          () => void errors++,
        ),
      );
      sent++;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, start + sent * interval - performance.now())));
  }
  await Promise.all(inflight);
  agent.destroy();
  return { samples, errors };
}

/** Closed loop: `connections` workers, each sending its next request when the previous one ended. */
async function closedLoop(
  target: Target,
  stream: boolean,
  connections: number,
  seconds = SECONDS,
): Promise<PreciseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const payload = body(target.model, stream);
  const samples: Sample[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        try {
          samples.push(await once(agent, target, payload, performance.now()));
        } catch {
          errors++;
        }
      }
    }),
  );
  agent.destroy();
  return summarize(samples, errors, seconds);
}

// ---------- run ----------

async function main() {
  const started = Date.now();
  const loadBefore = os.loadavg();
  console.log(
    `proxy-latency: ${SECONDS}s per run, ${RATE} req/s fixed rate, ${os.cpus().length} CPUs, node ${process.version}` +
      `, variants: direct proxy ${VARIANTS.join(' ')}${ONLY_PRECISE ? ', precise only' : ''}${PIN ? `, pinned (${PIN})` : ''}`,
  );
  if (PIN === 'split') pin(process.pid, '0');
  const children: ChildProcess[] = [];
  const simChild = await startChild('sim', {});
  children.push(simChild.child);
  const server = new Map<Target['name'], ChildProcess>([['direct', simChild.child]]);
  const direct: Target = {
    name: 'direct',
    url: simChild.info.url,
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    model: 'gpt-4o-mini',
  };
  const proxyTarget = async (name: 'proxy' | 'proxy-nopub'): Promise<Target> => {
    const { child, info } = await startChild('proxy', {
      PROVIDER_SIM_URL: simChild.info.url,
      AMQP_URL,
      AMQP_PREFIX,
      ...(name === 'proxy-nopub' ? { BENCH_PUBLISHER: 'none' } : {}),
    });
    children.push(child);
    server.set(name, child);
    return {
      name,
      url: info.url,
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${info.key}` },
      model: 'openai/gpt-4o-mini',
    };
  };
  const miniTarget = async (name: 'mini' | 'mini-redis'): Promise<Target> => {
    const { child, info } = await startChild(name, { PROVIDER_SIM_URL: simChild.info.url });
    children.push(child);
    server.set(name, child);
    return {
      name,
      url: info.url,
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      model: 'openai/gpt-4o-mini',
    };
  };

  try {
    const proxied = await proxyTarget('proxy');
    const controls: Target[] = [];
    for (const v of CONTROLS) {
      if (!VARIANTS.includes(v)) continue;
      controls.push(v === 'proxy-nopub' ? await proxyTarget(v) : await miniTarget(v));
    }
    /** Every non-streamed target, cheapest first; streamed scenarios use direct and proxy only. */
    const jsonTargets = [direct, ...controls, proxied];
    const streamTargets = [direct, proxied];

    // Sanity + warm-up (JIT, keep-alive pools, Redis connection).
    for (const t of jsonTargets) {
      const s = await once(new http.Agent(), t, body(t.model, false), performance.now());
      if (s.status !== 200) throw new Error(`${t.name} answered ${s.status}`);
      await closedLoop(t, false, 8, 2);
    }

    const results: Record<string, unknown> = {};
    const serverOf = (t: Target) => server.get(t.name) as ChildProcess;
    const step = async <T extends { requests: number }>(
      name: string,
      target: Target,
      run: () => Promise<T>,
    ) => {
      process.stdout.write(`  ${name} ... `);
      const cpuBefore = await cpuMicros(serverOf(target));
      const r = await run();
      const cpu = (await cpuMicros(serverOf(target))) - cpuBefore;
      // CPU time the serving process spent per request: independent of what else runs on the machine.
      const cpuUsPerRequest = Math.round(cpu / Math.max(1, r.requests));
      console.log(
        `done (${cpuUsPerRequest} µs CPU/request in ${target.name === 'direct' ? 'the simulator' : target.name})`,
      );
      results[name] = { ...r, cpuUsPerRequest };
      return r;
    };
    // Each scenario runs against every target back to back (same machine load).
    const scenarios: [string, Target[], (t: Target) => Promise<{ requests: number }>][] = ONLY_PRECISE
      ? []
      : [
          [`json.autocannon.rate${RATE}`, streamTargets, (t) => cannon(t, false, RATE)],
          ['json.autocannon.max', jsonTargets, (t) => cannon(t, false, undefined)],
          ['stream.precise.max', streamTargets, (t) => closedLoop(t, true, MAX_CONNECTIONS)],
        ];
    for (const [name, targets, run] of scenarios) {
      for (const t of targets) await step(`${t.name}.${name}`, t, () => run(t));
    }
    // Fixed rate, µs resolution: ROUNDS × (every target) interleaved, so drifting machine load hits all.
    for (const stream of ONLY_PRECISE ? [false] : [false, true]) {
      const name = `${stream ? 'stream' : 'json'}.precise.rate${RATE}`;
      const targets = stream ? streamTargets : jsonTargets;
      const pooled = new Map<Target, { samples: Sample[]; errors: number; cpu: number }>();
      for (let round = 0; round < ROUNDS; round++) {
        for (const t of targets) {
          process.stdout.write(`  ${t.name}.${name} round ${round + 1}/${ROUNDS} ... `);
          const cpuBefore = await cpuMicros(serverOf(t));
          const r = await openLoopSamples(t, stream, RATE);
          const cpu = (await cpuMicros(serverOf(t))) - cpuBefore;
          const acc = pooled.get(t) ?? { samples: [], errors: 0, cpu: 0 };
          acc.samples.push(...r.samples);
          acc.errors += r.errors;
          acc.cpu += cpu;
          pooled.set(t, acc);
          const one = summarize(r.samples, r.errors, SECONDS);
          console.log(`p50 ${one.p50} p99 ${one.p99} ms`);
        }
      }
      for (const [t, acc] of pooled) {
        const summary = summarize(acc.samples, acc.errors, SECONDS * ROUNDS);
        results[`${t.name}.${name}`] = {
          ...summary,
          rounds: ROUNDS,
          cpuUsPerRequest: Math.round(acc.cpu / Math.max(1, summary.requests)),
        };
      }
    }

    type Row = PreciseResult & CannonResult & { cpuUsPerRequest: number };
    const get = (k: string) => results[k] as Row | undefined;
    const added = (name: string, k: string, f: keyof PreciseResult) => {
      const a = get(`${name}.${k}`);
      const b = get(`direct.${k}`);
      return a && b ? Math.round(((a[f] as number) - (b[f] as number)) * 1000) / 1000 : null;
    };
    const precise = `json.precise.rate${RATE}`;
    // Per variant: what it adds over the simulator alone at the fixed rate, its CPU cost at that rate
    // and at saturation, and its max throughput.
    const attribution: Record<string, Record<string, number | null>> = {};
    for (const t of jsonTargets) {
      attribution[t.name] = {
        addedP50Ms: added(t.name, precise, 'p50'),
        addedP90Ms: added(t.name, precise, 'p90'),
        addedP99Ms: added(t.name, precise, 'p99'),
        cpuUsPerRequestAtRate: get(`${t.name}.${precise}`)?.cpuUsPerRequest ?? null,
        cpuUsPerRequestAtMax: get(`${t.name}.json.autocannon.max`)?.cpuUsPerRequest ?? null,
        maxRps: get(`${t.name}.json.autocannon.max`)?.rps ?? null,
      };
    }
    const summary = {
      addedP50MsJsonAt500: added('proxy', precise, 'p50'),
      addedP99MsJsonAt500: added('proxy', precise, 'p99'),
      addedTtfbP50MsStreamAt500: added('proxy', `stream.precise.rate${RATE}`, 'ttfbP50'),
      addedTtfbP99MsStreamAt500: added('proxy', `stream.precise.rate${RATE}`, 'ttfbP99'),
      maxRpsJsonDirect: get('direct.json.autocannon.max')?.rps ?? null,
      maxRpsJsonProxy: get('proxy.json.autocannon.max')?.rps ?? null,
      cpuUsPerRequestDirectJson: get('direct.json.autocannon.max')?.cpuUsPerRequest ?? null,
      cpuUsPerRequestProxyJson: get('proxy.json.autocannon.max')?.cpuUsPerRequest ?? null,
      cpuUsPerRequestProxyStream: get('proxy.stream.precise.max')?.cpuUsPerRequest ?? null,
      targetAddedP99Ms: 2,
    };
    const out = {
      date: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        node: process.version,
        platform: process.platform,
        // Other work on the machine skews tails: the load average before and after the run.
        loadAverageBefore: loadBefore.map((x) => Math.round(x * 100) / 100),
        loadAverageAfter: os.loadavg().map((x) => Math.round(x * 100) / 100),
      },
      settings: {
        secondsPerRun: SECONDS,
        rounds: ROUNDS,
        rate: RATE,
        maxConnections: MAX_CONNECTIONS,
        completionTokens: sim.completion_tokens,
        variants: jsonTargets.map((t) => t.name),
        onlyPrecise: ONLY_PRECISE,
        pin: PIN || null,
      },
      summary,
      attribution,
      results,
      durationSeconds: Math.round((Date.now() - started) / 1000),
    };
    writeFileSync(RESULTS, `${JSON.stringify(out, null, 2)}\n`);
    printTable(results, summary);
    console.table(attribution);
    console.log(`\nwritten to ${RESULTS}`);
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    await cleanupAmqp();
  }
}

function printTable(results: Record<string, unknown>, summary: Record<string, number | null>) {
  const rows: Record<string, Record<string, string | number>> = {};
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 3 : 1) : '-');
  for (const [name, r] of Object.entries(results)) {
    const x = r as Partial<PreciseResult & CannonResult>;
    rows[name] = {
      'p50 ms': f(x.p50 ?? Number.NaN),
      'p99 ms': f(x.p99 ?? Number.NaN),
      'ttfb p50': x.ttfbP50 === undefined ? '' : f(x.ttfbP50),
      'ttfb p99': x.ttfbP99 === undefined ? '' : f(x.ttfbP99),
      'req/s': Math.round(x.rps ?? 0),
      'CPU µs/req': (x as { cpuUsPerRequest?: number }).cpuUsPerRequest ?? '',
      errors: (x.errors ?? 0) + (x.non2xx ?? 0),
    };
  }
  console.log();
  console.table(rows);
  console.table(summary);
}

async function cleanupAmqp() {
  const t = usageTopology(AMQP_PREFIX);
  try {
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createChannel();
    for (const q of [t.queue, t.deadLetterQueue]) await ch.deleteQueue(q).catch(() => {});
    for (const e of [t.exchange, t.deadLetterExchange]) await ch.deleteExchange(e).catch(() => {});
    await conn.close();
  } catch (err) {
    console.warn(`amqp cleanup failed: ${String(err)}`);
  }
}

await main();
