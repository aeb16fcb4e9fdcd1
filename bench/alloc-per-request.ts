/**
 * V8 heap bytes the proxy allocates per chat request, and who allocates them (issue 11: the streamed
 * TTFB tail is GC). Runs bench/compare.ts's sequential phase (the whole stack, the production build,
 * one keep-alive connection) with bench/alloc/preload.mjs loaded into the single-process proxy, and
 * with `ALLOC_B=<another build's main.js>` into a second proxy `tollgate-b` interleaved with it (an A/B
 * in one run), then prints bytes per request and the top allocators of each.
 *
 *   make build && pnpm exec tsx bench/alloc-per-request.ts
 *   ALLOC_STREAM=1 ...            the requests streamed (default: JSON)
 *   ALLOC_B=node_modules/.ab/base/main.js ...   A/B against a copy of another build's services/proxy/dist
 *                                 (relative to services/proxy, as BENCH_PROXY_B)
 *   ALLOC_ROUNDS (2), ALLOC_SEQ (3000 per round), ALLOC_TOP (25), ALLOC_OUT (JSON of the result)
 *
 * Bytes are exact (v8.GCProfiler: heap used after − before + what every GC freed), counted from the
 * 700th chat request (after compare.ts's 500 warm-up requests) in windows that close 1 s after the last
 * response (the work a request leaves behind is in; the idle time between runs is not); attribution is
 * V8's sampling heap profiler (collected objects included) over the same windows, app code mapped to
 * its TypeScript through the build's source maps. The seq phase also prints each proxy's CPU µs per
 * request per round (/proc), interleaved.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import os from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { root, runCompare } from './support/run-compare';

const STREAM = process.env.ALLOC_STREAM === '1';
const B = process.env.ALLOC_B;
const ROUNDS = Number(process.env.ALLOC_ROUNDS ?? 2);
const SEQ = Number(process.env.ALLOC_SEQ ?? 3000);
const TOP = Number(process.env.ALLOC_TOP ?? 25);
const dir = mkdtempSync(join(os.tmpdir(), 'tollgate-alloc-'));

interface Site {
  fn: string;
  url: string;
  line: number;
  column: number;
}
interface Frame extends Site {
  /** The first caller outside Node's own modules, when the frame is Node's. */
  via: Site | null;
  bytes: number;
}
interface ProcessResult {
  pid: number;
  main: string;
  requests: number;
  windows: number;
  windowMs: number;
  bytes: number;
  bytesPerRequest: number;
  sampledBytes: number;
  frames: Frame[];
}

const loadBefore = os.loadavg();
const started = Date.now();
const code = await runCompare(
  {
    BENCH_ONLY: 'seq',
    BENCH_TARGETS: B ? 'tollgate,tollgate-b' : 'tollgate',
    BENCH_ROUNDS: String(ROUNDS),
    BENCH_SEQ: String(SEQ),
    BENCH_SEQ_STREAM: STREAM ? '1' : '0',
    BENCH_PROXY_NODE_OPTIONS: `--import=${join(root, 'bench/alloc/preload.mjs')}`,
    BENCH_PROXY_ENV: `ALLOC_DIR=${dir},ALLOC_WARMUP=700`,
    BENCH_OUT: join(dir, 'compare.json'),
  },
  B,
);
const loadAfter = os.loadavg();
if (code !== 0) throw new Error(`bench/compare.ts exited ${code}`);

const results = readdirSync(dir)
  .filter((f) => f.startsWith('alloc-'))
  .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as ProcessResult)
  .filter((r) => r.requests > 0);

// ------------------------------------------------------------------ attribution
const maps = new Map<string, SourceMap | null>();
function sourceMapOf(url: string): SourceMap | null {
  if (!maps.has(url)) {
    const file = url.startsWith('file://') ? fileURLToPath(url) : url;
    const mapFile = `${file}.map`;
    maps.set(url, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : null);
  }
  return maps.get(url) ?? null;
}
/** Who a frame belongs to: a package, a node: module, V8/native, or a source file of the repo. */
function ownerOf(f: Site): { owner: string; where: string } {
  if (f.url === '') return { owner: '(V8/native)', where: f.fn };
  if (f.url.startsWith('node:')) return { owner: f.url, where: `${f.fn}:${f.line + 1}` };
  const nm = f.url.lastIndexOf('/node_modules/');
  // A build copied under node_modules (ALLOC_B, e.g. node_modules/.ab/base) is app code, not a package.
  if (nm !== -1 && !f.url.startsWith('/node_modules/.', nm)) {
    const parts = f.url.slice(nm + '/node_modules/'.length).split('/');
    const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? '?');
    const file = parts.slice(pkg.includes('/') ? 2 : 1).join('/');
    return { owner: pkg, where: `${f.fn} ${file}:${f.line + 1}` };
  }
  const map = sourceMapOf(f.url);
  const entry = map?.findEntry(f.line, f.column) as
    | { originalSource?: string; originalLine?: number }
    | undefined;
  if (entry?.originalSource) {
    // Sources are relative to the dist the build wrote (a copy elsewhere, ALLOC_B, keeps them so).
    const src = entry.originalSource.startsWith('file://')
      ? fileURLToPath(entry.originalSource)
      : resolve(root, 'services/proxy/dist', entry.originalSource);
    const rel = relative(root, src);
    const pnpm = rel.lastIndexOf('node_modules/');
    const owner = pnpm !== -1 ? rel.slice(pnpm + 'node_modules/'.length).split('/')[0] : rel;
    return { owner: owner ?? rel, where: `${f.fn} :${(entry.originalLine ?? 0) + 1}` };
  }
  return { owner: f.url, where: `${f.fn}:${f.line + 1}` };
}

const kb = (n: number) => (n / 1024).toFixed(2);
const summary: Record<string, unknown> = {
  date: new Date(started).toISOString(),
  stream: STREAM,
  loadavgBefore: loadBefore,
  loadavgAfter: loadAfter,
  proxies: {},
};
for (const r of results.sort((a, b) => a.main.localeCompare(b.main))) {
  const name = r.main === join(root, 'services/proxy/dist/main.js') ? 'tollgate' : 'tollgate-b';
  const scale = (r.bytes ?? 0) / Math.max(1, r.sampledBytes ?? 0) / Math.max(1, r.requests);
  const byOwner = new Map<string, number>();
  const bySite = new Map<string, number>();
  const byCaller = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const f of r.frames ?? []) {
    const { owner, where } = ownerOf(f);
    add(byOwner, owner, f.bytes * scale);
    add(bySite, `${owner} ${where}`, f.bytes * scale);
    // Node's own allocations charged to the app code or package that made Node allocate.
    const via = f.via ? ownerOf(f.via) : null;
    add(byCaller, via ? `${via.owner} ${via.where} (via ${owner})` : `${owner} ${where}`, f.bytes * scale);
  }
  const top = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, v]) => ({ what: k, bytesPerRequest: Math.round(v) }));
  (summary.proxies as Record<string, unknown>)[name] = {
    main: relative(root, r.main),
    requests: r.requests,
    bytesPerRequest: r.bytesPerRequest,
    windowMs: r.windowMs,
    windows: r.windows,
    byOwner: top(byOwner),
    bySite: top(bySite),
    byCaller: top(byCaller),
  };
  process.stdout.write(
    `\n${name} (${relative(root, r.main)}): ${kb(r.bytesPerRequest ?? 0)} KB allocated per ${STREAM ? 'streamed' : 'JSON'} request` +
      ` (${r.requests} requests in ${r.windows} windows, ${r.windowMs} ms)\n`,
  );
  process.stdout.write('  by owner (sampled, scaled to the exact total), KB per request:\n');
  for (const { what, bytesPerRequest } of top(byOwner))
    process.stdout.write(`    ${kb(bytesPerRequest).padStart(7)}  ${what}\n`);
  process.stdout.write('  by allocating function, KB per request:\n');
  for (const { what, bytesPerRequest } of top(bySite))
    process.stdout.write(`    ${kb(bytesPerRequest).padStart(7)}  ${what}\n`);
  process.stdout.write(
    "  Node's own allocations charged to their first caller outside node:*, KB per request:\n",
  );
  for (const { what, bytesPerRequest } of top(byCaller))
    process.stdout.write(`    ${kb(bytesPerRequest).padStart(7)}  ${what}\n`);
}
process.stdout.write(
  `\nload average before ${loadBefore.map((x) => x.toFixed(2)).join(' / ')}, after ${loadAfter.map((x) => x.toFixed(2)).join(' / ')}\n`,
);
if (process.env.ALLOC_OUT) writeFileSync(process.env.ALLOC_OUT, `${JSON.stringify(summary, null, 2)}\n`);
rmSync(dir, { recursive: true, force: true });
