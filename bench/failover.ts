/**
 * What failover costs: sequential non-streamed completions through the whole proxy (auth, spend guard
 * off as in the test stack, usage events to RabbitMQ) against the provider simulator, for
 *   healthy    model served by [sim]
 *   refused    model served by [down, sim]: the first provider refuses the connection
 * plus the bare cost of a refused connection (a fetch to the closed port). The failover
 * overhead is refused − healthy − bare refused connect. Rounds are interleaved; samples pooled.
 *
 *   pnpm exec tsx bench/failover.ts        (BENCH_REQUESTS=1000 per variant per round, BENCH_ROUNDS=3)
 *
 * Writes bench/results/failover.json and prints a table. Needs the local Postgres, Redis, RabbitMQ.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { parseCatalog } from '@tollgate/catalog';
import { startProviderSim } from '@tollgate/provider-sim';
import { bearer, startProxyStack } from '@tollgate/proxy/testing';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function main() {
  // The test stack names its databases, prefixes and queues after the run id (vitest's setup sets it).
  process.env.TOLLGATE_TEST_RUN ??= `bench${Date.now().toString(36)}`;
  const sim = await startProviderSim();
  const down = await freePort(); // nothing listens: connection refused
  const model = (id: string, providers: string[]) => `  - id: ${id}
    name: ${id}
    context_length: 8000
    max_output_tokens: 50
    created: 1
    providers: [${providers.map((p) => `{ provider: ${p}, model: gpt-4o-mini }`).join(', ')}]
    pricing: { prompt: "0.000001", completion: "0.000002" }`;
  const catalog = parseCatalog(
    `providers:
  - { name: down, base_url: "http://127.0.0.1:${down}/v1" }
  - { name: sim, base_url: "${sim.baseUrl}", simulator: true }
models:
${model('b/healthy', ['sim'])}
${model('b/refused', ['down', 'sim'])}
`,
    { env: {} },
  );
  // The circuit breaker would skip `down` after 3 failures; the bench measures the failover itself.
  const stack = await startProxyStack({ env: { CIRCUIT_FAILURE_THRESHOLD: '1000000' }, deps: { catalog } });
  const headers = { ...bearer(stack.inference), 'content-type': 'application/json' };
  const body = (m: string) =>
    JSON.stringify({ model: m, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });

  async function completion(m: string): Promise<number> {
    const t0 = performance.now();
    const res = await fetch(`${stack.api}/chat/completions`, { method: 'POST', headers, body: body(m) });
    await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return performance.now() - t0;
  }
  async function refusedConnect(): Promise<number> {
    const t0 = performance.now();
    await fetch(`http://127.0.0.1:${down}/v1/chat/completions`, { method: 'POST' }).catch(() => {});
    return performance.now() - t0;
  }

  const samples: Record<'healthy' | 'refused' | 'connect', number[]> = {
    healthy: [],
    refused: [],
    connect: [],
  };
  for (let i = 0; i < 200; i++) await completion('b/healthy'); // warm-up
  for (let i = 0; i < 200; i++) await completion('b/refused');
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < REQUESTS; i++) samples.healthy.push(await completion('b/healthy'));
    for (let i = 0; i < REQUESTS; i++) samples.refused.push(await completion('b/refused'));
    for (let i = 0; i < REQUESTS; i++) samples.connect.push(await refusedConnect());
  }
  const row = (xs: number[]) => ({ p50: +pct(xs, 50).toFixed(3), p99: +pct(xs, 99).toFixed(3) });
  const healthy = row(samples.healthy);
  const refused = row(samples.refused);
  const connect = row(samples.connect);
  const overhead = {
    p50: +(refused.p50 - healthy.p50 - connect.p50).toFixed(3),
    p99: +(refused.p99 - healthy.p99 - connect.p99).toFixed(3),
  };
  const results = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, loadavg: os.loadavg() },
    requests: REQUESTS * ROUNDS,
    ms: {
      healthy,
      refused_then_healthy: refused,
      bare_refused_connect: connect,
      failover_overhead: overhead,
    },
  };
  writeFileSync(new URL('./results/failover.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
  console.log('sequential (fetch, keep-alive), ms           p50      p99');
  console.log(`healthy [sim]                              ${healthy.p50}    ${healthy.p99}`);
  console.log(`refused → sim [down, sim]                  ${refused.p50}    ${refused.p99}`);
  console.log(`bare refused connect                       ${connect.p50}    ${connect.p99}`);
  console.log(`failover overhead (refused − healthy − connect) ${overhead.p50}    ${overhead.p99}`);
  console.log(
    `load average during the run: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  await stack.close();
  await sim.close();
}

await main();
process.exit(0);
