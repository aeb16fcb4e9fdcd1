/**
 * Markdown tables of a bench/compare.ts result (the tables of bench/README.md):
 *   pnpm exec tsx bench/compare/report.ts [bench/results/compare.json]
 */
import { readFileSync } from 'node:fs';

// biome-ignore lint/suspicious/noExplicitAny: the results file is free-form JSON written by compare.ts
type Any = any;
const file = process.argv[2] ?? new URL('../results/compare.json', import.meta.url).pathname;
const r: Any = JSON.parse(readFileSync(file, 'utf8'));
const out: string[] = [];
const row = (...cells: unknown[]) =>
  out.push(`| ${cells.map((c) => (c === undefined ? '—' : String(c))).join(' | ')} |`);
const ms = (v: number | null | undefined) => (v == null || Number.isNaN(v) ? '—' : `${v.toFixed(2)} ms`);
const met = (ok: boolean) => (ok ? '**met**' : '**not met**');

out.push(
  `Run ${r.date}: ${r.machine.cpus} CPUs (${r.machine.model}), ${r.machine.memGb} GB, Node ${r.machine.node}; load average before ${r.loadavgBefore.map((x: number) => x.toFixed(2)).join(' / ')}, after ${r.loadavgAfter?.map((x: number) => x.toFixed(2)).join(' / ')}.`,
);
out.push('');

const seq = r.sequential;
const max = r.maxThroughput;
const ttfb = r.streamTtfb500;
const portkeyRps = max?.portkey?.rpsMedian;
const tollRps = max?.tollgate?.rpsMedian;
const wKey = Object.keys(max ?? {}).find((k) => /^tollgate-w\d+$/.test(k));
out.push('| target (issue 11) | measured | |');
out.push('|---|---|---|');
if (seq) {
  row(
    'sequential added latency over direct: p50 ≤ 0.3 ms',
    ms(seq.tollgate.addedP50),
    met(seq.tollgate.addedP50 <= 0.3),
  );
  row(
    'sequential added latency over direct: p99 ≤ 1 ms',
    ms(seq.tollgate.addedP99),
    met(seq.tollgate.addedP99 <= 1),
  );
}
if (max) {
  row(
    'max throughput ≥ 4× Portkey (32 connections)',
    `${tollRps} vs ${portkeyRps} req/s = ${(tollRps / portkeyRps).toFixed(2)}×`,
    met(tollRps >= 4 * portkeyRps),
  );
  if (wKey)
    row(
      `with WORKERS = cores (${wKey.slice(10)})`,
      `${max[wKey].rpsMedian} req/s (${(max[wKey].rpsMedian / tollRps).toFixed(2)}× WORKERS=1)`,
      '',
    );
}
if (ttfb?.tollgate)
  row(
    'streaming at 500 req/s: added TTFB p99 ≤ 2 ms',
    ms(ttfb.tollgate.addedP99),
    met(ttfb.tollgate.addedP99 <= 2),
  );
const cs = r.concurrentStreams;
if (cs)
  row(
    `≥ 2,000 concurrent streams (64 × 20 ms), none stalled`,
    `${cs.streams} streams, ${cs.finished} finished, ${cs.stalled} stalled; duration p50 ${ms(cs.durationP50)} p99 ${ms(cs.durationP99)}, longest gap p99 ${ms(cs.maxGapP99)}, TTFB p99 ${ms(cs.ttfbP99)}` +
      (cs.direct
        ? ` (direct: p50 ${ms(cs.direct.durationP50)} p99 ${ms(cs.direct.durationP99)}, gap p99 ${ms(cs.direct.maxGapP99)}, ${cs.direct.stalled} stalled)`
        : ''),
    met(cs.streams >= 2000 && cs.stalled === 0),
  );
const rss = r.openStreamsRss;
if (rss) {
  const direct = rss.direct as Any;
  for (const [name, v] of Object.entries(rss).filter(([k, v]) => typeof v === 'object' && k !== 'direct') as [
    string,
    Any,
  ][]) {
    if (direct && name.startsWith('tollgate-w'))
      row(
        `10,000 open streams (${name}): first byte p99 ≤ 2× direct, 0 stalled`,
        `${ms(v.ttfbP99)} vs ${ms(direct.ttfbP99)} = ${(v.ttfbP99 / direct.ttfbP99).toFixed(2)}×; ${v.stalled} stalled (direct ${direct.stalled}); duration p50 ${ms(v.durationP50)} vs ${ms(direct.durationP50)}`,
        met(v.ttfbP99 <= 2 * direct.ttfbP99 && v.stalled === 0),
      );
    if (v.refused503 !== undefined && name === 'tollgate')
      row(
        `one process at its descriptor ceiling (${rss.oneProcessServes ?? '?'} served): 503 for the excess, never a reset`,
        `${v.streams} sent: ${v.finished} streamed, ${v.refused503} × 503, ${v.resets} resets, ${v.stalled} stalled`,
        met(v.resets === 0 && v.stalled === 0 && v.finished + v.refused503 === v.streams),
      );
    row(
      `proxy RSS at 10,000 open streams ≤ 1 GB (${name})`,
      `${v.streams} open: ${v.rssAllOpenMb} MB (idle ${v.rssIdleMb}, peak ${v.rssPeakMb}); ${v.finished} finished, ${v.stalled} stalled`,
      v.streams >= 10_000 ? met(v.rssPeakMb <= 1024) : 'partial (open-files limit)',
    );
  }
}
const b = r.billing;
if (b) {
  row(
    'billing ≥ 10,000 events/s committed',
    `${b.backlogEventsPerSecond}/s draining a ${b.backlogEvents}-event backlog${
      b.backlogBillingCpuUsPerEvent === undefined
        ? ''
        : `, CPU ${b.backlogBillingCpuUsPerEvent} µs/event billing + ${b.backlogPostgresCpuUsPerEvent} Postgres`
    } (live: ${b.liveCommittedPerSecond}/s at ${b.liveProxyRps} req/s)`,
    met(b.backlogEventsPerSecond >= 10_000),
  );
  row(
    'request end → generation visible p99 ≤ 1 s at max throughput',
    `p50 ${ms(b.visibleAfterEndMs.p50)}, p99 ${ms(b.visibleAfterEndMs.p99)} (${b.visibleAfterEndMs.n} samples)`,
    met(b.visibleAfterEndMs.p99 <= 1000),
  );
}
const g = r.gets;
if (g)
  for (const k of ['key', 'credits', 'generation'])
    row(`GET /${k} p50 ≤ 2 ms`, ms(g[k]?.p50), met(g[k]?.p50 <= 2));
out.push('');

if (seq || max || ttfb) {
  out.push('| measure | direct | Portkey | Tollgate | Tollgate WORKERS=cores |');
  out.push('|---|---|---|---|---|');
  if (seq)
    row(
      'sequential p50 / p99',
      `${ms(seq.direct.p50)} / ${ms(seq.direct.p99)}`,
      `${ms(seq.portkey.p50)} / ${ms(seq.portkey.p99)}`,
      `${ms(seq.tollgate.p50)} / ${ms(seq.tollgate.p99)}`,
      '',
    );
  if (seq)
    row(
      'sequential added p50 / p99',
      '',
      `${ms(seq.portkey.addedP50)} / ${ms(seq.portkey.addedP99)}`,
      `${ms(seq.tollgate.addedP50)} / ${ms(seq.tollgate.addedP99)}`,
      '',
    );
  if (max)
    row(
      'max req/s, 32 connections (median of rounds)',
      max.direct?.rpsMedian,
      portkeyRps,
      tollRps,
      wKey ? max[wKey].rpsMedian : undefined,
    );
  if (max)
    row(
      '… rounds',
      max.direct?.rpsRuns?.join(' / '),
      max.portkey?.rpsRuns?.join(' / '),
      max.tollgate?.rpsRuns?.join(' / '),
      wKey ? max[wKey].rpsRuns.join(' / ') : undefined,
    );
  if (ttfb)
    row(
      'streamed TTFB @ 500 req/s p50 / p99',
      `${ms(ttfb.direct?.p50)} / ${ms(ttfb.direct?.p99)}`,
      ttfb.portkey
        ? `${ms(ttfb.portkey.p50)} / ${ms(ttfb.portkey.p99)}`
        : `HTTP ${r.streamedStatus?.portkey} (does not stream)`,
      `${ms(ttfb.tollgate?.p50)} / ${ms(ttfb.tollgate?.p99)}`,
      '',
    );
  out.push('');
}

const cpu = r.cpuAtFixedRate;
if (cpu) {
  const t = cpu.tollgate;
  out.push(
    `CPU µs per request at ${cpu.rate} req/s (non-streamed, ${cpu.seconds} s; /proc/<pid>/stat user+system):`,
  );
  out.push('');
  out.push(
    '| process | Tollgate: µs/request | minus the idle background | idle background (ms CPU/s) | Tollgate at max throughput |',
  );
  out.push('|---|---|---|---|---|');
  let total = 0;
  let totalIdle = 0;
  for (const k of Object.keys(t.usPerRequest)) {
    total += t.usPerRequest[k];
    totalIdle += t.usPerRequestMinusIdle[k];
    row(
      k,
      t.usPerRequest[k],
      t.usPerRequestMinusIdle[k],
      t.idleMsPerSecond?.[k],
      max?.tollgate?.cpuUsPerRequest?.[k],
    );
  }
  const maxTotal = max?.tollgate?.cpuUsPerRequest
    ? Object.values(max.tollgate.cpuUsPerRequest as Record<string, number>).reduce((a, v) => a + v, 0)
    : undefined;
  row('**whole system**', total, totalIdle, '', maxTotal);
  out.push('');
  out.push(
    `Portkey at the same rate: ${cpu.portkey?.usPerRequest?.portkey} µs/request (its upstream ${cpu.portkey?.usPerRequest?.upstream}); the upstream alone (direct): ${cpu.direct?.usPerRequest?.direct} µs/request.`,
  );
  out.push('');
}
const doors = r.doors as Record<string, Any> | undefined;
if (doors) {
  const x = (v: number | undefined) => (v === undefined ? '—' : `${v.toFixed(2)}×`);
  out.push(
    'Front doors through the same proxy and upstream (issue 30: within 10 % of chat completions; each JSON door as a ratio to chat, each streamed one to streamed chat). Latency: the interleaved sequential mix, to the end of the answer (streams: and to the first byte); at the fixed rate: open loop, the requests of every door in turn (before session 12: a slice per door), streams to the first byte; CPU: every process of the stack (the proxy alone):',
  );
  out.push('');
  out.push(
    '| door | sequential p50 / p99 | ratio | first byte p50 / p99 | ratio | @ rate p50 / p99 | ratio | CPU µs/request (proxy) | ratio | errors |',
  );
  out.push('|---|---|---|---|---|---|---|---|---|---|');
  for (const [k, v] of Object.entries(doors))
    row(
      k,
      `${ms(v.p50)} / ${ms(v.p99)}`,
      `${x(v.p50Ratio)} / ${x(v.p99Ratio)}`,
      v.stream ? `${ms(v.ttfbP50)} / ${ms(v.ttfbP99)}` : '',
      v.stream ? `${x(v.ttfbP50Ratio)} / ${x(v.ttfbP99Ratio)}` : '',
      `${ms(v.rateP50)} / ${ms(v.rateP99)}`,
      `${x(v.rateP50Ratio)} / ${x(v.rateP99Ratio)}`,
      `${v.cpuUsPerRequest} (${v.proxyUsPerRequest})`,
      `${x(v.cpuRatio)} (${x(v.proxyCpuRatio)})`,
      `${v.errors}, ${v.rateErrors}`,
    );
  out.push('');
}
const rc = r.redisCommandsPerRequest;
if (rc) {
  out.push(
    'Redis commands per chat request (private redis-server, sequential requests; commands inside scripts are counted too):',
  );
  out.push('');
  out.push('| command | calls/request | µs/request |');
  out.push('|---|---|---|');
  for (const [k, v] of Object.entries(rc.perRequest) as [string, Any][]) row(k, v.calls, v.usec);
  out.push('');
}
process.stdout.write(`${out.join('\n')}\n`);

// Sizing figures (docs/operations.md "Sizing"): CPU per 1,000 req/s per process, memory per stream.
if (cpu?.tollgate) {
  const t = cpu.tollgate.usPerRequestMinusIdle as Record<string, number>;
  const lines = ['', 'Sizing (from the fixed-rate CPU figures, idle background subtracted):', ''];
  lines.push('| process | CPU µs/request | cores per 1,000 req/s |');
  lines.push('|---|---|---|');
  let sum = 0;
  for (const [k, us] of Object.entries(t)) {
    if (k === 'upstream') continue;
    sum += us;
    lines.push(`| ${k} | ${us} | ${(us / 1000).toFixed(2)} |`);
  }
  lines.push(`| **Tollgate + servers** | ${sum} | ${(sum / 1000).toFixed(2)} |`);
  const rs = r.openStreamsRss as Any;
  for (const [name, v] of Object.entries(rs ?? {}).filter(
    ([k, v]) => typeof v === 'object' && k !== 'direct',
  ) as [string, Any][]) {
    const open = v.rssAllOpenMb || v.rssPeakMb;
    const streams = v.finished ?? v.streams;
    lines.push(
      '',
      `${name}: ${((1024 * (open - v.rssIdleMb)) / Math.max(1, streams)).toFixed(0)} KB RSS per open stream (${v.rssIdleMb} MB before, ${open} MB with ${streams} streams).`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
