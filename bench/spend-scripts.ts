/**
 * Diagnostic: what the spend scripts cost Redis, each in isolation, against a private redis-server
 * (started here on a free port, stopped at the end; never the shared one).
 *
 *   pnpm exec tsx bench/spend-scripts.ts            (SPEND_BENCH_N=4000 SPEND_BENCH_HOLDS=0,50,500)
 *   SPEND_BENCH_BATCHED=1         settle each round of 64 requests in one `settleMany` call
 *   SPEND_BENCH_STORE=<path>      another checkout's packages/spend/src/store.ts (A/B of the scripts)
 *   SPEND_BENCH_PHASES=admit,settle,commit,renew,baseline
 *
 * Timings here are noisy on a shared machine; for A/B prefer instruction counts (run the private
 * redis-server under `valgrind --tool=callgrind`, see bench/README.md "Spend scripts").
 *
 * For each phase: `INFO commandstats` usec per call of EVALSHA and of the commands inside it, and the
 * redis-server CPU (/proc/<pid>/stat, user + system) per script call. Phases run sequentially (one
 * call in flight: a full round trip each, like a lightly loaded proxy) and pipelined (64 in flight,
 * like a saturated one). The hashes are realistic: a key with a daily limit and day/week/month/all
 * fields, a prepaid account, and `holds` live reservations and pending costs of other requests.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { toUnits } from '@tollgate/money';
import { Redis } from 'ioredis';
import type { Lease, SettleArgs, SpendStore } from '../packages/spend/src/store';

// SPEND_BENCH_STORE: another checkout's store module (e.g. /work/main/packages/spend/src/store.ts) for A/B.
const { createSpendStore } = (await import(
  process.env.SPEND_BENCH_STORE ?? '../packages/spend/src/store'
)) as {
  createSpendStore: (redis: Redis, o: { prefix: string; timings?: object }) => SpendStore;
};
const BATCHED = process.env.SPEND_BENCH_BATCHED === '1';

const N = Number(process.env.SPEND_BENCH_N ?? 4000);
const HOLDS = (process.env.SPEND_BENCH_HOLDS ?? '0,50,500').split(',').map(Number);
const PHASES = (process.env.SPEND_BENCH_PHASES ?? '').split(',').filter(Boolean);
const want = (p: string) => PHASES.length === 0 || PHASES.includes(p);

const port = await new Promise<number>((res) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as net.AddressInfo).port;
    s.close(() => res(p));
  });
});
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
await new Promise((r) => setTimeout(r, 300));
const redis = new Redis({ port, host: '127.0.0.1', enableAutoPipelining: true });
const CLK = 100; // USER_HZ
const cpuUs = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK;
};
const stats = async () => {
  const out = (await redis.info('commandstats')) as string;
  const m: Record<string, { calls: number; usec: number }> = {};
  for (const line of out.split('\n')) {
    const x = /^cmdstat_(\w+(?:\|\w+)?):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (x && x[1] !== 'info' && x[1] !== 'config')
      m[x[1] as string] = { calls: Number(x[2]), usec: Number(x[3]) };
  }
  return m;
};

const prefix = 'sb:';
const NOW = Date.now();
const day = (d: Date) => d.toISOString().slice(0, 10);
const PERIOD = `d${day(new Date(NOW))}`;
const store = createSpendStore(redis, { prefix, timings: {} });
const usd = (s: string) => toUnits(s);
let seq = 0;
const rid = () => `gen-${Math.floor(NOW / 1000)}-${(seq++).toString(36).padStart(20, '0')}`;

async function setup(keyId: string, accountId: string, holds: number) {
  await store.beginRebuild({ keyId, accountId }, NOW);
  await store.loadKey(accountId, keyId, NOW, { d: PERIOD, w: 'w2026-W48', m: 'm2026-11' }, [
    [PERIOD, usd('12.3456789')],
    ['w2026-W48', usd('40.5')],
    ['m2026-11', usd('150.25')],
    ['all', usd('1234.5')],
  ]);
  await store.loadAccount(accountId, NOW, {
    usageUnits: usd('1234.5'),
    creditsUnits: usd('1000000'),
    postpaid: false,
    version: 1,
  });
  // Other requests' live reservations (half) and pending costs (half).
  for (let i = 0; i < holds; i++) {
    const requestId = rid();
    const a = await admitOne(keyId, accountId, requestId);
    if (i % 2 === 0) await store.settle({ ...a, costUnits: usd('0.0012345'), now: NOW });
  }
}
async function admitOne(keyId: string, accountId: string, requestId: string, now = NOW) {
  const o = await store.admit({
    keyId,
    accountId,
    requestId,
    worstCaseUnits: usd('0.0123456789'),
    limitUnits: usd('1000000'),
    period: PERIOD,
    now,
  });
  if (o.code !== 'admitted') throw new Error(`not admitted: ${JSON.stringify(o)}`);
  return { keyId, accountId, requestId, keyTracked: o.keyTracked, accountTracked: o.accountTracked };
}

interface Row {
  phase: string;
  holds: number;
  mode: string;
  calls: number;
  scriptUsec: number;
  innerUsec: number;
  innerCalls: number;
  cpuUsPerCall: number;
  inner: Record<string, number>;
}
const rows: Row[] = [];
type Stats = Awaited<ReturnType<typeof stats>>;
/** Accumulates the commandstats and CPU deltas of every `part` of one phase. */
function phaseMeter(phase: string, holds: number, mode: string) {
  const acc: Stats = {};
  let cpu = 0;
  let calls = 0;
  return {
    async part(n: number, fn: () => Promise<unknown>) {
      const s0 = await stats();
      const c0 = cpuUs();
      await fn();
      const c1 = cpuUs();
      const s1 = await stats();
      cpu += c1 - c0;
      calls += n;
      for (const [k, v] of Object.entries(s1)) {
        const b = s0[k] ?? { calls: 0, usec: 0 };
        const a = acc[k] ?? { calls: 0, usec: 0 };
        acc[k] = a;
        a.calls += v.calls - b.calls;
        a.usec += v.usec - b.usec;
      }
    },
    done() {
      const s = acc;
      const ev = (s.evalsha?.usec ?? 0) + (s.eval?.usec ?? 0);
      const evCalls = (s.evalsha?.calls ?? 0) + (s.eval?.calls ?? 0) || calls;
      let innerUsec = 0;
      let innerCalls = 0;
      const inner: Record<string, number> = {};
      for (const [k, v] of Object.entries(s)) {
        if (k === 'evalsha' || k === 'eval' || v.calls === 0) continue;
        innerUsec += v.usec;
        innerCalls += v.calls;
        inner[k] = Math.round((v.calls / evCalls) * 100) / 100;
      }
      const row: Row = {
        phase,
        holds,
        mode,
        calls: evCalls,
        scriptUsec: Math.round((ev / evCalls) * 100) / 100,
        innerUsec: Math.round((innerUsec / evCalls) * 100) / 100,
        innerCalls: Math.round((innerCalls / evCalls) * 100) / 100,
        cpuUsPerCall: Math.round(cpu / calls),
        inner,
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    },
  };
}
async function measure(phase: string, holds: number, mode: string, calls: number, fn: () => Promise<void>) {
  const m = phaseMeter(phase, holds, mode);
  await m.part(calls, fn);
  m.done();
}

async function run(mode: 'seq' | 'pipe', count: number, f: (i: number) => Promise<unknown>) {
  if (mode === 'seq') {
    for (let i = 0; i < count; i++) await f(i);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(64, count) }, async () => {
        while (next < count) await f(next++);
      }),
    );
  }
}

// Baselines: the fixed cost of a script call.
if (want('baseline')) {
  const empty = 'return 0';
  const sha = (await redis.script('LOAD', empty)) as string;
  for (const mode of ['seq', 'pipe'] as const)
    await measure('empty script', 0, mode, N, () => run(mode, N, () => redis.evalsha(sha, 0)));
  const shaK = (await redis.script('LOAD', "return redis.call('HGET', KEYS[1], '_ok')")) as string;
  for (const mode of ['seq', 'pipe'] as const)
    await measure('one HGET', 0, mode, N, () => run(mode, N, () => redis.evalsha(shaK, 1, 'sb:x')));
  for (const mode of ['seq', 'pipe'] as const)
    await measure('plain HGET (no script)', 0, mode, N, () => run(mode, N, () => redis.hget('sb:x', '_ok')));
}

const CHUNK = 64;
for (const holds of HOLDS) {
  for (const mode of ['seq', 'pipe'] as const) {
    const keyId = `k${holds}${mode}`;
    const accountId = `a${holds}${mode}`;
    await setup(keyId, accountId, holds);
    const mAdmit = phaseMeter('admit', holds, mode);
    const mSettle = phaseMeter('settle', holds, mode);
    const mCommit = phaseMeter('commit (per owner, 64/batch)', holds, mode);
    // Rounds of CHUNK requests: admit them, settle them, commit them (the hash stays at `holds` + CHUNK).
    for (let done = 0; done < N; done += CHUNK) {
      const ids = Array.from({ length: CHUNK }, rid);
      const res: Array<Awaited<ReturnType<typeof admitOne>>> = [];
      await mAdmit.part(CHUNK, () =>
        run(mode, CHUNK, async (i) => {
          res[i] = await admitOne(keyId, accountId, ids[i] as string);
        }),
      );
      const settles: SettleArgs[] = res.map((x) => ({ ...x, costUnits: usd('0.0012345'), now: NOW }));
      await mSettle.part(CHUNK, () =>
        BATCHED && 'settleMany' in store
          ? store.settleMany(settles)
          : run(mode, CHUNK, (i) => store.settle(settles[i] as SettleArgs)),
      );
      await mCommit.part(2, () =>
        store.applyCommitted(
          NOW,
          [
            {
              keyId,
              accountId,
              totals: [
                [PERIOD, usd('13')],
                ['w2026-W48', usd('41')],
                ['m2026-11', usd('151')],
                ['all', usd('1235')],
              ],
              requestIds: ids,
            },
          ],
          [{ accountId, usageUnits: usd('1235'), requestIds: ids }],
        ),
      );
    }
    if (want('admit')) mAdmit.done();
    if (want('settle')) mSettle.done();
    if (want('commit')) mCommit.done();
    if (want('renew') && mode === 'seq') {
      // One process with 200 live leases renewing (each lease: key + account entry).
      const leases: Lease[] = [];
      for (let i = 0; i < 200; i++) {
        const r = await admitOne(keyId, accountId, rid());
        leases.push({ ...r, units: usd('0.0123456789'), limitUnits: usd('1000000'), period: PERIOD });
      }
      await measure('renew (200 leases = 400 entries)', holds, mode, 100, () =>
        run('seq', 100, () => store.renew(NOW + 1000, leases)),
      );
    }
  }
}
console.table(
  rows.map(({ inner, ...r }) => ({
    ...r,
    inner: Object.entries(inner)
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
  })),
);
redis.disconnect();
server.kill('SIGTERM');
