/**
 * Bytes allocated per request by a Node server, and who allocates them: a preload for the process
 * measured (`node --import <this file> dist/main.js`; in bench/compare.ts through
 * `BENCH_PROXY_NODE_OPTIONS`). bench/alloc-per-request.ts runs it and prints the tables.
 *
 * - Requests: `POST` requests whose URL contains `ALLOC_PATH` (default `/chat/completions`), counted
 *   by `node:diagnostics_channel` (`http.server.request.start` / `http.server.response.finish`).
 * - Windows: after `ALLOC_WARMUP` such requests (default 500: the JIT warm), a window opens with the
 *   next request and closes `ALLOC_TAIL_MS` (default 1000) after the last response finished, so the
 *   work a request leaves behind (settles, usage publishing) is in it and the idle time between load
 *   runs (another proxy's turn, billing's commits) is not; windows add up.
 * - Bytes: V8 heap bytes allocated in the windows, exact, from `v8.GCProfiler` (heap used at the end
 *   − at the start + what every GC in between freed). Young- and old-generation objects alike, the
 *   JS objects of Buffers included (their backing stores are outside the V8 heap, not counted).
 * - Who: V8's sampling heap profiler (`ALLOC_SAMPLING` bytes, default 4096) with the objects that
 *   GC already collected included, running in the windows: self bytes per top frame (function,
 *   script, line, column).
 *
 * Writes `<ALLOC_DIR>/alloc-<pid>.json` (default /tmp/tollgate-alloc) when SIGTERM arrives (before
 * the server's own shutdown). Diagnostics only: not loaded by anything in production.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import v8 from 'node:v8';
import { measureRequests, sampled } from './sampled.mjs';

const PATH = process.env.ALLOC_PATH ?? '/chat/completions';
const WARMUP = Number(process.env.ALLOC_WARMUP ?? 500);
const SAMPLING = Number(process.env.ALLOC_SAMPLING ?? 4096);
const TAIL_MS = Number(process.env.ALLOC_TAIL_MS ?? 1000);
const DIR = process.env.ALLOC_DIR ?? '/tmp/tollgate-alloc';

const session = new Session();
session.connect();
const used = () => v8.getHeapStatistics().used_heap_size;

let bytes = 0;
let windowMs = 0;
let windows = 0;
/** The open window: its GC record, heap used and time at its start. */
let open = null;
const frames = new Map();

function openWindow() {
  const profiler = new v8.GCProfiler();
  profiler.start();
  session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  open = { profiler, heap: used(), at: performance.now() };
}

function closeWindow() {
  if (open === null) return;
  const record = open.profiler.stop();
  let freed = 0;
  for (const gc of record?.statistics ?? []) {
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  }
  bytes += used() - open.heap + freed;
  windowMs += performance.now() - open.at;
  windows++;
  open = null;
  session.post('HeapProfiler.stopSampling', (err, res) => {
    if (err) return;
    for (const [key, n] of sampled(res.profile)) frames.set(key, (frames.get(key) ?? 0) + n);
  });
}

const measured = measureRequests({
  path: PATH,
  warmup: WARMUP,
  tailMs: TAIL_MS,
  isOpen: () => open !== null,
  openWindow,
  closeWindow,
});

function frameList() {
  return [...frames]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 1500)
    .map(([key, n]) => {
      const [fn, url, line, column, viaFn, viaUrl, viaLine, viaColumn] = key.split('\t');
      const via = viaUrl
        ? { fn: viaFn, url: viaUrl, line: Number(viaLine), column: Number(viaColumn) }
        : null;
      return { fn, url, line: Number(line), column: Number(column), via, bytes: n };
    });
}

process.once('SIGTERM', () => {
  closeWindow();
  const list = frameList();
  const result = {
    pid: process.pid,
    main: process.argv[1],
    path: PATH,
    warmup: WARMUP,
    tailMs: TAIL_MS,
    windows,
    windowMs: Math.round(windowMs),
    requests: measured.requests,
    bytes,
    bytesPerRequest: Math.round(bytes / Math.max(1, measured.requests)),
    sampledBytes: [...frames.values()].reduce((a, n) => a + n, 0),
    frames: list,
  };
  mkdirSync(DIR, { recursive: true });
  writeFileSync(join(DIR, `alloc-${process.pid}.json`), `${JSON.stringify(result)}\n`);
  // The server's own SIGTERM listener (registered after this one) runs next: its usual shutdown.
});
