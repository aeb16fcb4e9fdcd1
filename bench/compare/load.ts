/**
 * The load generator of bench/compare.ts, always its own process (never sharing an event loop with a
 * server). One job per run: `node --import tsx bench/compare/load.ts '<job json>'`; progress events
 * and the result are JSON lines on stdout (`{"event": …}` then `{"result": …}`).
 *
 *   seq      one keep-alive connection, requests back to back: per-request latency (µs resolution)
 *   mix      several requests (`requests`), one keep-alive connection each, sent in turn — each round
 *            one of each, the order rotated every round — so all see the same moments of a shared
 *            machine: per-request latency to the end and to the first body byte, per request
 *   max      autocannon, N connections, fixed duration: req/s and latency percentiles
 *   rate     open loop at R req/s (latency counted from the *scheduled* start): time to first body
 *            byte and to the end, for streamed or JSON requests
 *   ratemix  the same open loop at R req/s in all, over several requests (`requests`) sent in turn —
 *            request i is `requests[i % n]` — so each sees the same moments of a shared machine (a
 *            load spike hits all of them): per request, the time to first body byte and to the end
 *   streams  N streams opened together (ramped over `rampMs`), each read to its end: chunk gaps,
 *            durations, stalls (a gap longer than `stallMs`, an error, or no end by the deadline);
 *            emits `{"event":"open"}` once every stream has its first byte and waits `holdMs` then
 * Every job carries `{url, headers, body}` of the request to send.
 */
import http from 'node:http';
import autocannon from 'autocannon';

interface Request {
  url: string;
  method?: string;
  headers: Record<string, string>;
  body?: string;
}
type Job =
  | ({
      kind: 'seq';
      count: number;
      warmup: number;
      /** A second URL (A/B): each round sends one request to each, alternating which goes first. */
      alternate?: string;
    } & Request)
  | { kind: 'mix'; count: number; warmup: number; requests: Request[] }
  | ({ kind: 'max'; connections: number; seconds: number } & Request)
  | ({ kind: 'rate'; rate: number; seconds: number; sockets: number } & Request)
  | { kind: 'ratemix'; rate: number; seconds: number; sockets: number; requests: Request[] }
  | ({
      kind: 'streams';
      streams: number;
      rampMs: number;
      stallMs: number;
      deadlineMs: number;
      holdMs?: number;
    } & Request);

const job = JSON.parse(process.argv[2] ?? '{}') as Job;
const emit = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

interface Timing {
  status: number;
  /** ms from (scheduled) start to the first body byte, and to the end. */
  ttfb: number;
  total: number;
  bytes: number;
  chunks: number;
  maxGap: number;
  error?: string;
  /** The start of the body of an answer that is not a 200 (its error message, for the counts). */
  detail?: string;
}

/** What a refused answer said: its error envelope's message, or its first bytes. */
function reason(t: Timing): string {
  try {
    return (JSON.parse(t.detail ?? '') as { error: { message: string } }).error.message;
  } catch {
    return (t.detail ?? '').slice(0, 120);
  }
}

function send(agent: http.Agent, r: Request, start: number, onFirst?: () => void): Promise<Timing> {
  return new Promise((resolve) => {
    const u = new URL(r.url);
    const body = r.body === undefined ? undefined : Buffer.from(r.body);
    const t: Timing = { status: 0, ttfb: 0, total: 0, bytes: 0, chunks: 0, maxGap: 0 };
    let last = 0;
    const req = http.request(
      {
        agent,
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: r.method ?? (body ? 'POST' : 'GET'),
        headers: body ? { ...r.headers, 'content-length': String(body.length) } : r.headers,
      },
      (res) => {
        t.status = res.statusCode ?? 0;
        res.on('data', (b: Buffer) => {
          const now = performance.now();
          if (t.chunks === 0) {
            t.ttfb = now - start;
            onFirst?.();
          } else if (now - last > t.maxGap) t.maxGap = now - last;
          last = now;
          t.chunks++;
          t.bytes += b.length;
          if (t.status !== 200 && (t.detail?.length ?? 0) < 2048) t.detail = (t.detail ?? '') + b.toString();
        });
        res.on('end', () => {
          t.total = performance.now() - start;
          resolve(t);
        });
        res.on('error', (err) => {
          t.error = err.message;
          t.total = performance.now() - start;
          resolve(t);
        });
      },
    );
    req.on('error', (err) => {
      t.error = err.message;
      t.total = performance.now() - start;
      resolve(t);
    });
    req.end(body);
  });
}

const pct = (sorted: number[], p: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
const round = (n: number) => Math.round(n * 1000) / 1000;

async function seq(j: Extract<Job, { kind: 'seq' }>) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const agentB = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples: number[] = [];
  const samplesB: number[] = [];
  let errors = 0;
  let errorsB = 0;
  for (let i = 0; i < j.warmup + j.count; i++) {
    const order = j.alternate && i % 2 === 1 ? (['b', 'a'] as const) : (['a', 'b'] as const);
    for (const which of order) {
      if (which === 'b' && !j.alternate) continue;
      const t =
        which === 'a'
          ? await send(agent, j, performance.now())
          : await send(agentB, { ...j, url: j.alternate as string }, performance.now());
      const bad = t.status !== 200 || Boolean(t.error);
      if (which === 'a') errors += bad ? 1 : 0;
      else errorsB += bad ? 1 : 0;
      if (i >= j.warmup) (which === 'a' ? samples : samplesB).push(t.total);
    }
  }
  agent.destroy();
  agentB.destroy();
  return j.alternate
    ? { samples: samples.map(round), errors, samplesB: samplesB.map(round), errorsB }
    : { samples: samples.map(round), errors };
}

async function mix(j: Extract<Job, { kind: 'mix' }>) {
  const n = j.requests.length;
  const agents = j.requests.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const total: number[][] = j.requests.map(() => []);
  const ttfb: number[][] = j.requests.map(() => []);
  const errors: number[] = j.requests.map(() => 0);
  const firstErrors: string[] = [];
  for (let i = 0; i < j.warmup + j.count; i++) {
    for (let k = 0; k < n; k++) {
      const which = (i + k) % n;
      const t = await send(agents[which] as http.Agent, j.requests[which] as Request, performance.now());
      if (t.status !== 200 || t.error) {
        errors[which] = (errors[which] ?? 0) + 1;
        if (firstErrors.length < 3) firstErrors.push(`#${which}: ${t.error ?? `HTTP ${t.status}`}`);
        continue;
      }
      if (i < j.warmup) continue;
      total[which]?.push(round(t.total));
      ttfb[which]?.push(round(t.ttfb));
    }
  }
  for (const a of agents) a.destroy();
  return { total, ttfb, errors, firstErrors };
}

async function max(j: Extract<Job, { kind: 'max' }>) {
  const r = await autocannon({
    url: j.url,
    method: (j.method ?? 'POST') as 'POST',
    headers: j.headers,
    body: j.body,
    connections: j.connections,
    duration: j.seconds,
  });
  return {
    rps: r.requests.average,
    requests: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

/** Sends `rate` requests a second for `seconds`, request i being `pick(i)`, each timed from its scheduled start. */
async function openLoop(
  j: { rate: number; seconds: number; sockets: number },
  pick: (i: number) => Request,
): Promise<Timing[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: j.sockets });
  const total = Math.round(j.rate * j.seconds);
  const t0 = performance.now() + 20;
  const results: Promise<Timing>[] = [];
  await new Promise<void>((done) => {
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      while (sent < total && t0 + (sent * 1000) / j.rate <= now) {
        results.push(send(agent, pick(sent), t0 + (sent * 1000) / j.rate));
        sent++;
      }
      if (sent >= total) done();
      else setTimeout(tick, 1);
    };
    setTimeout(tick, 20);
  });
  const all = await Promise.all(results);
  agent.destroy();
  return all;
}

/** The latencies of the answered requests, and what the errors were. */
function summary(all: Timing[]) {
  const ok = all.filter((t) => t.status === 200 && !t.error);
  // What the errors were (issue 30: "2 errors of 8,000"): `HTTP <status>` or the socket error.
  const errorKinds: Record<string, number> = {};
  for (const t of all) {
    if (t.status === 200 && !t.error) continue;
    const kind = t.error ? `${t.error}${t.status ? ` after HTTP ${t.status}` : ''}` : `HTTP ${t.status}`;
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  }
  return {
    requests: all.length,
    errors: all.length - ok.length,
    errorKinds,
    ttfb: ok.map((t) => round(t.ttfb)),
    total: ok.map((t) => round(t.total)),
  };
}

async function rate(j: Extract<Job, { kind: 'rate' }>) {
  return summary(await openLoop(j, () => j));
}

async function ratemix(j: Extract<Job, { kind: 'ratemix' }>) {
  const n = j.requests.length;
  const all = await openLoop(j, (i) => j.requests[i % n] as Request);
  return j.requests.map((_, k) => summary(all.filter((_, i) => i % n === k)));
}

async function streams(j: Extract<Job, { kind: 'streams' }>) {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const cpu0 = process.cpuUsage();
  let opened = 0;
  let announced = false;
  const started = performance.now();
  const all: Promise<Timing>[] = [];
  /** Streams ended so far (at the deadline: the outcomes of those that did end). */
  const ended: Timing[] = [];
  let openResolve: () => void = () => {};
  const allOpen = new Promise<void>((r) => {
    openResolve = r;
  });
  for (let i = 0; i < j.streams; i++) {
    const at = started + (i * j.rampMs) / j.streams;
    const wait = at - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const answered = () => {
      opened++;
      if (opened === j.streams) openResolve();
    };
    // A stream that ends without a body byte (a reset, a refused connection) is answered too: the
    // 'open' moment is when every stream has its first byte or has failed.
    all.push(
      send(agent, j, performance.now(), answered).then((t) => {
        if (t.chunks === 0) answered();
        ended.push(t);
        return t;
      }),
    );
  }
  const openOrTimeout = await Promise.race([
    allOpen.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), j.deadlineMs)),
  ]);
  if (openOrTimeout && !announced) {
    announced = true;
    emit({ event: 'open', streams: opened, ms: round(performance.now() - started) });
    if (j.holdMs) await new Promise((r) => setTimeout(r, j.holdMs));
  }
  const deadline = new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), j.deadlineMs));
  const settled = await Promise.race([Promise.all(all), deadline]);
  // At the deadline every stream counts as stalled, but the outcomes of those that ended (a 503, a
  // reset) are still counted below.
  const done = settled === 'deadline' ? [...ended] : settled;
  const finished = settled === 'deadline' ? [] : done.filter((t) => t.status === 200 && !t.error);
  // A clear 503 (a process at its connection ceiling) is a refusal, not a stall; anything else that
  // is not a whole 200 stream (a reset, another status, a gap longer than stallMs) is a stall.
  const refused = done.filter((t) => t.status === 503 && !t.error).length;
  const stalled = done.filter(
    (t) => !(t.status === 503 && !t.error) && (t.status !== 200 || t.error || t.maxGap > j.stallMs),
  ).length;
  const statuses: Record<string, number> = {};
  for (const t of done) {
    const k = t.error ? `${t.status || 'no response'}: ${t.error}` : String(t.status);
    statuses[k] = (statuses[k] ?? 0) + 1;
  }
  const resets = done.filter((t) => t.error && /ECONNRESET|socket hang up|EPIPE/.test(t.error)).length;
  // Why the 503s were refused (the connection cap, spend counters, the provider pool…), counted.
  const refusedBecause: Record<string, number> = {};
  for (const t of done) {
    if (t.status !== 503 || t.error) continue;
    const why = reason(t);
    refusedBecause[why] = (refusedBecause[why] ?? 0) + 1;
  }
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  const durations = sorted(finished.map((t) => t.total));
  const gaps = sorted(finished.map((t) => t.maxGap));
  const firstErrors = done.filter((t) => t.error || (t.status !== 200 && t.status !== 503)).slice(0, 3);
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  return {
    streams: j.streams,
    opened,
    allOpen: openOrTimeout,
    finished: finished.length,
    stalled: settled === 'deadline' ? j.streams : stalled,
    refused503: refused,
    refusedBecause,
    resets,
    statuses,
    deadlineHit: settled === 'deadline',
    ended: ended.length,
    durationP50: round(pct(durations, 50)),
    durationP99: round(pct(durations, 99)),
    maxGapP99: round(pct(gaps, 99)),
    maxGapMax: round(gaps.at(-1) ?? Number.NaN),
    ttfbP50: round(pct(sorted(finished.map((t) => t.ttfb)), 50)),
    ttfbP99: round(pct(sorted(finished.map((t) => t.ttfb)), 99)),
    /** This load generator's own CPU (user + system) over the job. */
    loadCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    errors: firstErrors.map((t) => ({ status: t.status, error: t.error })),
  };
}

const run = { seq, mix, max, rate, ratemix, streams } as const;
const result = await (run[job.kind] as (j: Job) => Promise<unknown>)(job);
// Exit once the result line is written: stdout is a socket to the parent, asynchronous, and a large
// result (ratemix: every latency of 11 doors × 500 req/s) was cut off by an immediate exit (session 13
// and 14: "exited 0 without a result (ratemix)").
process.stdout.write(`${JSON.stringify({ result })}\n`, () => process.exit(0));
