/**
 * What one chat request costs the proxy, in measures that do not move with the rest of a shared
 * machine (issue 30): system calls per request (by name; reads and writes per peer), Redis commands
 * per request, and, beside them, proxy CPU µs per request (/proc). Runs bench/compare.ts's `counts`
 * phase: the whole stack as `make bench` starts it (production build, every guard on, private
 * redis-server), N requests at a fixed rate, JSON and streamed (bench/compare/counts.ts).
 *
 *   make build && pnpm exec tsx bench/cpu-per-request.ts
 *   COUNT_B=node_modules/.ab/base/main.js ...  A/B: another build's main.js (relative to services/proxy,
 *                                  as BENCH_PROXY_B) as `tollgate-b`, interleaved with this build
 *   COUNT_SEQ=1: sequential requests (one at a time, one keep-alive connection) instead of the rate:
 *                                  nothing is shared between requests, so the counts hold on a busy machine
 *   COUNT_REQUESTS (3000 per run), COUNT_RATE (500 req/s), COUNT_ROUNDS (2), COUNT_STRACE (1; 0: CPU
 *   and Redis only), COUNT_MODES (json,stream), COUNT_OUT (JSON of the result; default a temporary file)
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { CountsResult } from './compare/counts';
import { runCompare } from './support/run-compare';

const B = process.env.COUNT_B;
const out = process.env.COUNT_OUT ?? join(mkdtempSync(join(os.tmpdir(), 'tollgate-counts-')), 'compare.json');

const loadBefore = os.loadavg();
const code = await runCompare(
  {
    BENCH_ONLY: 'counts',
    BENCH_ROUNDS: process.env.COUNT_ROUNDS ?? '2',
    BENCH_COUNT_REQUESTS: process.env.COUNT_REQUESTS ?? '3000',
    BENCH_COUNT_RATE: process.env.COUNT_RATE ?? '500',
    BENCH_COUNT_STRACE: process.env.COUNT_STRACE ?? '1',
    BENCH_COUNT_MODES: process.env.COUNT_MODES ?? 'json,stream',
    BENCH_COUNT_SEQ: process.env.COUNT_SEQ ?? '0',
    BENCH_OUT: out,
  },
  B,
);
if (code !== 0) {
  process.stderr.write(`bench/compare.ts exited ${code}\n`);
  process.exit(1);
}
const results = JSON.parse(readFileSync(out, 'utf8')) as {
  countsPerRequest: { rate: number | 'sequential'; requests: number; runs: Record<string, CountsResult[]> };
};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.floor((s.length - 1) / 2)] as number);
};
const fmt = (xs: number[]) => `${median(xs)} (${xs.join(' / ')})`;
const { rate, requests, runs } = results.countsPerRequest;
const lines = [
  `Per chat request, ${requests} requests ${rate === 'sequential' ? 'sequential' : `at ${rate} req/s`} per run; load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')} → ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}; median (runs)`,
  '',
  '| measure | ' + Object.keys(runs).join(' | ') + ' |',
  '|---|' +
    Object.keys(runs)
      .map(() => '---|')
      .join(''),
];
const row = (label: string, pick: (r: CountsResult) => number | undefined) =>
  lines.push(
    `| ${label} | ${Object.values(runs)
      .map((rs) => fmt(rs.map(pick).filter((v): v is number => v !== undefined)))
      .join(' | ')} |`,
  );
const keysOf = (pick: (r: CountsResult) => Record<string, number> | undefined) => [
  ...new Set(Object.values(runs).flatMap((rs) => rs.flatMap((r) => Object.keys(pick(r) ?? {})))),
];
row('proxy CPU µs', (r) => r.proxyCpuUsPerRequest);
row('proxy wake-ups (voluntary context switches)', (r) => r.proxyWakeupsPerRequest);
row('proxy read syscalls (/proc io)', (r) => r.proxyReadSyscallsPerRequest);
row('proxy write syscalls (/proc io)', (r) => r.proxyWriteSyscallsPerRequest);
row('redis-server CPU µs', (r) => r.redisServerCpuUsPerRequest);
for (const k of keysOf((r) => r.otherCpuUsPerRequest)) row(`${k} CPU µs`, (r) => r.otherCpuUsPerRequest?.[k]);
row('errors', (r) => r.errors);
row('syscalls', (r) => r.syscallsPerRequest);
row('… of other threads', (r) => r.otherThreadSyscalls);
for (const k of keysOf((r) => r.syscallsByName)) row(`syscall ${k}`, (r) => r.syscallsByName?.[k] ?? 0);
for (const k of keysOf((r) => r.writesByPeer)) row(`writes to ${k}`, (r) => r.writesByPeer?.[k] ?? 0);
for (const k of keysOf((r) => r.readsByPeer)) row(`reads from ${k}`, (r) => r.readsByPeer?.[k] ?? 0);
for (const k of keysOf((r) => r.redisCommandsPerRequest))
  row(`redis ${k}`, (r) => r.redisCommandsPerRequest?.[k] ?? 0);
process.stdout.write(`${lines.join('\n')}\n\nfull results: ${out}\n`);
