/**
 * What a Node server's requests leave to the old generation: a preload for the process measured
 * (`node --import <this file> dist/main.js`; in bench/compare.ts through `BENCH_PROXY_NODE_OPTIONS`,
 * and `BENCH_PROXY_B_NODE_OPTIONS` / `BENCH_PROXY_B_ENV` for `tollgate-b`). Diagnostics only (issue 30,
 * session 15; bench/README.md "What survives a scavenge").
 *
 * - Requests and windows as bench/alloc/preload.mjs: `POST` requests whose URL contains `GC_PATH`
 *   (default `/chat/completions`), from the `GC_WARMUP`-th (default 700), in windows that close
 *   `GC_TAIL_MS` (default 1000) after the last response finished.
 * - Bytes, exact, from `v8.GCProfiler` over the windows, per request: `promotedPerRequest` (what the
 *   spaces outside the young generation gained across each young-generation GC: Scavenge, or
 *   MinorMarkSweep under --minor-ms), `survivedPerRequest` (the young generation after each), and
 *   `directOldPerRequest` (what those spaces gained between GCs: maps, large objects, pretenured).
 * - `GC_SITES=1` (needs --expose-gc): V8's sampling heap profiler (`GC_SAMPLING` bytes, default 1024)
 *   keeping the samples of objects a mark-compact collected and dropping those a young GC collected:
 *   self bytes per request per top frame of what was promoted (plus what is live when the window
 *   closes, after two forced young GCs). `GC_SITES=all`: every allocation, to compare site by site.
 * - `GC_FINAL=1`: a FinalizationRegistry on each measured `ServerResponse` and its
 *   `res.locals.completion`, time from `finish` to collection. Beware: V8's young GCs treat
 *   FinalizationRegistry (and WeakRef) targets as strong, so this alone promotes what it watches.
 * - `GC_CUT`: when a measured response closes, drop `res.locals` and `req.body` (1), also every own
 *   property of the completion, the locals and the body (2), or (3) every own property of the
 *   response and the request except `socket` on the next turn: which part of a request's graph the
 *   retention reaches.
 * - `GC_TAG`: a label copied into the result (which proxy of an A/B it was).
 *
 * Writes `<GC_DIR>/gc-<pid>.json` (default /tmp/tollgate-gc) when SIGTERM arrives.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import v8 from 'node:v8';
import { measureRequests, sampled } from './sampled.mjs';

const PATH = process.env.GC_PATH ?? '/chat/completions';
const WARMUP = Number(process.env.GC_WARMUP ?? 700);
const TAIL_MS = Number(process.env.GC_TAIL_MS ?? 1000);
const DIR = process.env.GC_DIR ?? '/tmp/tollgate-gc';
/** `1`: sites of what was promoted; `all`: sites of everything allocated (minor-GC garbage kept too). */
const SITES = process.env.GC_SITES === '1' || process.env.GC_SITES === 'all';
const ALL_SITES = process.env.GC_SITES === 'all';
const SAMPLING = Number(process.env.GC_SAMPLING ?? 1024);
const FINAL = process.env.GC_FINAL === '1';
const CUT = ['1', '2', '3'].includes(process.env.GC_CUT ?? '');

const session = SITES ? new Session() : null;
session?.connect();

let windowMs = 0;
let windows = 0;
const totals = {
  scavenges: 0,
  promoted: 0,
  survived: 0,
  scavengeMs: 0,
  markCompacts: 0,
  directOld: 0,
  promotedLarge: 0,
};
/** Bytes of each space outside the young generation after the previous GC of the window. */
let lastOld = null;
let open = null;
const frames = new Map();

const YOUNG = new Set(['new_space', 'new_large_object_space']);

function openWindow() {
  const profiler = new v8.GCProfiler();
  profiler.start();
  session?.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: ALL_SITES,
  });
  open = { profiler, at: performance.now() };
}

function closeWindow() {
  if (open === null) return;
  if (session && typeof globalThis.gc === 'function') {
    globalThis.gc({ type: 'minor' });
    globalThis.gc({ type: 'minor' });
  }
  const record = open.profiler.stop();
  lastOld = null;
  for (const gc of record?.statistics ?? []) {
    // Allocated straight into the old generation (maps, large objects, pretenured) since the last GC.
    if (lastOld !== null) {
      for (const s of gc.beforeGC.heapSpaceStatistics) {
        if (!YOUNG.has(s.spaceName)) totals.directOld += s.spaceUsedSize - (lastOld.get(s.spaceName) ?? 0);
      }
    }
    lastOld = new Map(gc.afterGC.heapSpaceStatistics.map((s) => [s.spaceName, s.spaceUsedSize]));
    if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkSweep') {
      totals.scavenges++;
      totals.scavengeMs += gc.cost / 1000;
      const before = new Map(gc.beforeGC.heapSpaceStatistics.map((s) => [s.spaceName, s.spaceUsedSize]));
      for (const s of gc.afterGC.heapSpaceStatistics) {
        if (YOUNG.has(s.spaceName)) totals.survived += s.spaceUsedSize;
        else totals.promoted += s.spaceUsedSize - (before.get(s.spaceName) ?? 0);
        if (s.spaceName === 'large_object_space')
          totals.promotedLarge += s.spaceUsedSize - (before.get(s.spaceName) ?? 0);
      }
    } else if (gc.gcType === 'MarkSweepCompact') totals.markCompacts++;
  }
  windowMs += performance.now() - open.at;
  windows++;
  open = null;
  session?.post('HeapProfiler.stopSampling', (err, res) => {
    if (err) return;
    for (const [raw, n] of sampled(res.profile)) {
      const key = readable(raw);
      frames.set(key, (frames.get(key) ?? 0) + n);
    }
  });
}

/** Finish → collected, ms, per kind of object (FinalizationRegistry). */
const lifetimes = { response: [], completion: [] };
const finishedAt = new WeakMap();
const registry = FINAL
  ? new FinalizationRegistry(({ kind, token }) => {
      const at = token.finishedAt;
      if (at !== undefined) lifetimes[kind].push(performance.now() - at);
    })
  : null;

function onStart(_request, response) {
  if (registry) {
    const token = {};
    finishedAt.set(response, token);
    registry.register(response, { kind: 'response', token });
  }
}

function onFinish(request, response) {
  if (CUT) {
    const completion = response.locals?.completion;
    response.once('close', () => {
      if (process.env.GC_CUT === '3') {
        // Everything of the response and the request, once both are done with (diagnostics only).
        setImmediate(() => {
          for (const o of [response, request])
            for (const k of Reflect.ownKeys(o)) if (k !== 'socket') o[k] = undefined;
        });
      }
      if (process.env.GC_CUT === '2') {
        for (const o of [completion, response.locals, request.body]) {
          if (o && typeof o === 'object') for (const k of Object.keys(o)) o[k] = undefined;
        }
      }
      response.locals = undefined;
      request.body = undefined;
    });
  }
  const token = registry ? finishedAt.get(response) : undefined;
  if (token) {
    token.finishedAt = performance.now();
    const completion = response.locals?.completion;
    if (completion) registry.register(completion, { kind: 'completion', token });
  }
}

const measured = measureRequests({
  path: PATH,
  warmup: WARMUP,
  tailMs: TAIL_MS,
  isOpen: () => open !== null,
  openWindow,
  closeWindow,
  onStart,
  onFinish,
});

/** bench/alloc/sampled.mjs's key (tab-separated, 0-based lines) as `fn\turl:line:col\tvia` (1-based). */
function readable(key) {
  const [fn, url, line, column, viaFn, viaUrl, viaLine, viaColumn] = key.split('\t');
  const at = (u, l, c) => `${u}:${Number(l) + 1}:${Number(c) + 1}`;
  return `${fn}\t${at(url, line, column)}\t${viaUrl ? `${viaFn} ${at(viaUrl, viaLine, viaColumn)}` : ''}`;
}

function quantiles(list) {
  if (list.length === 0) return null;
  const s = [...list].sort((a, b) => a - b);
  const q = (p) => Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]);
  return {
    collected: s.length,
    p10: q(10),
    p50: q(50),
    p90: q(90),
    p99: q(99),
    over1s: s.filter((x) => x > 1000).length,
  };
}

process.once('SIGTERM', () => {
  closeWindow();
  const per = (n) => Math.round(n / Math.max(1, measured.requests));
  const result = {
    pid: process.pid,
    main: process.argv[1],
    execArgv: process.execArgv,
    sites: process.env.GC_SITES ?? '0',
    tag: process.env.GC_TAG ?? '',
    path: PATH,
    windows,
    windowMs: Math.round(windowMs),
    requests: measured.requests,
    ...totals,
    scavengeMs: Math.round(totals.scavengeMs),
    promotedPerRequest: per(totals.promoted),
    survivedPerRequest: per(totals.survived),
    directOldPerRequest: per(totals.directOld),
    promotedLargePerRequest: per(totals.promotedLarge),
    lifetimes: FINAL
      ? { response: quantiles(lifetimes.response), completion: quantiles(lifetimes.completion) }
      : undefined,
    top: [...frames]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 400)
      .map(([key, n]) => ({ site: key, bytesPerRequest: per(n) })),
  };
  mkdirSync(DIR, { recursive: true });
  writeFileSync(join(DIR, `gc-${process.pid}.json`), `${JSON.stringify(result, null, 1)}\n`);
});
