/**
 * Load-independent costs of one chat request through a single-process proxy (issue 30): bench/compare.ts's
 * `counts` phase (`bench/cpu-per-request.ts` runs it). On a machine whose cores are shared, µs of
 * latency move with everyone else's work; these move with the code:
 *
 *   - proxy CPU µs per request (/proc/<pid>/stat utime + stime; still inflated by a busy machine's
 *     cache misses and preemptions, so read it beside the counts),
 *   - system calls per request by name, and reads / writes per peer (client, upstream, Redis,
 *     RabbitMQ, keys, billing), from `strace -f` of the proxy over the same fixed-rate run
 *     (a second run: strace slows the traced process, so CPU is measured without it),
 *   - Redis commands per request (`INFO commandstats` of the private redis-server: proxy, keys and
 *     billing together; commands inside scripts counted).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';

export interface CountsRequest {
  url: string;
  headers: Record<string, string>;
  body?: string;
}
export interface CountsContext {
  /** Runs one load.ts job in its own process. */
  load: <T>(job: Record<string, unknown>) => Promise<T>;
  /** Waits until billing has committed the previous run's events. */
  quiesce: () => Promise<void>;
  cpuMs: (pid: number) => number;
  /** `INFO commandstats` of the private redis-server (null: no private server). */
  redisStats: () => Map<string, { calls: number; usec: number }> | null;
  /** Remote TCP port → peer name (upstream, redis, rabbitmq, keys, billing). */
  peers: Map<number, string>;
  /** A file path prefix for the strace output. */
  tmp: string;
}
export interface CountsResult {
  requests: number;
  errors: number;
  proxyCpuUsPerRequest: number;
  /**
   * Wake-ups of the proxy's main thread per request: voluntary context switches (/proc/<pid>/status;
   * each is an event-loop wait that blocked), and its read / write system calls per request
   * (/proc/<pid>/io syscr / syscw, every thread) — both without strace, in the CPU run.
   */
  proxyWakeupsPerRequest?: number;
  proxyReadSyscallsPerRequest?: number;
  proxyWriteSyscallsPerRequest?: number;
  redisServerCpuUsPerRequest?: number;
  /** CPU µs per request of the other processes a request costs (billing, RabbitMQ: shared servers' background included). */
  otherCpuUsPerRequest?: Record<string, number>;
  redisCommandsPerRequest?: Record<string, number>;
  syscallsPerRequest?: number;
  syscallsByName?: Record<string, number>;
  /** writes (write, writev, sendmsg, sendto) per request per peer; `client` = the proxy's listen port. */
  writesByPeer?: Record<string, number>;
  readsByPeer?: Record<string, number>;
  /** Syscalls of threads other than the main one (libuv pool, V8 helpers) per request. */
  otherThreadSyscalls?: number;
}

/** Voluntary context switches of the main thread, and read / write syscalls of the process (null: unreadable). */
export function wakeups(pid: number): { voluntary: number; syscr: number; syscw: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (text: string, name: string) =>
      Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(text)?.[1]);
    return {
      voluntary: field(status, 'voluntary_ctxt_switches'),
      syscr: field(io, 'syscr'),
      syscw: field(io, 'syscw'),
    };
  } catch {
    return null;
  }
}

const WRITES = new Set(['write', 'writev', 'sendmsg', 'sendto', 'sendmmsg']);
const READS = new Set(['read', 'readv', 'recvmsg', 'recvfrom']);
const round2 = (n: number) => Math.round(n * 100) / 100;

/** socket inode → { local port, remote port } of every TCP socket (v4 and v6). */
function tcpSockets(): Map<string, { local: number; remote: number }> {
  const m = new Map<string, { local: number; remote: number }>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length < 10) continue;
      const port = (a: string | undefined) => Number.parseInt(a?.split(':')[1] ?? '0', 16);
      m.set(c[9] as string, { local: port(c[1]), remote: port(c[2]) });
    }
  }
  return m;
}

/** fd → peer name for the proxy's open descriptors. */
function fdPeers(pid: number, listenPort: number, peers: Map<number, string>): Map<number, string> {
  const sockets = tcpSockets();
  const out = new Map<number, string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    const s = inode ? sockets.get(inode) : undefined;
    if (!s)
      out.set(
        Number(fd),
        inode ? 'other-socket' : target.startsWith('anon_inode:') ? target.slice(11) : 'file',
      );
    else if (s.local === listenPort) out.set(Number(fd), 'client');
    else out.set(Number(fd), peers.get(s.remote) ?? `port-${s.remote}`);
  }
  return out;
}

function startStrace(pid: number, file: string): Promise<ChildProcess> {
  const child = spawn('strace', ['-f', '-qq', '-s', '0', '-o', file, '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // strace attaches in well under a second; give it that before the load starts.
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    setTimeout(() => resolve(child), 800);
  });
}

function parseStrace(
  file: string,
  pid: number,
  fds: Map<number, string>,
  requests: number,
): Pick<
  CountsResult,
  'syscallsPerRequest' | 'syscallsByName' | 'writesByPeer' | 'readsByPeer' | 'otherThreadSyscalls'
> {
  const byName = new Map<string, number>();
  const writes = new Map<string, number>();
  const reads = new Map<string, number>();
  let total = 0;
  let other = 0;
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const x = /^(\d+)\s+(\w+)\((\d*)/.exec(line);
    if (!x || line.includes('resumed>')) continue;
    const [, tid, name, fd] = x as unknown as [string, string, string, string];
    total += 1;
    add(byName, name);
    if (Number(tid) !== pid) other += 1;
    const peer = fd === '' ? 'none' : (fds.get(Number(fd)) ?? 'closed');
    if (WRITES.has(name)) add(writes, peer);
    if (READS.has(name)) add(reads, peer);
  }
  const per = (m: Map<string, number>) =>
    Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, round2(v / requests)]));
  return {
    syscallsPerRequest: round2(total / requests),
    syscallsByName: per(byName),
    writesByPeer: per(writes),
    readsByPeer: per(reads),
    otherThreadSyscalls: round2(other / requests),
  };
}

/**
 * One measurement: `requests` requests at `rate` req/s (open loop, 64 sockets), once for CPU and
 * Redis commands, once more under strace (when `strace` is set) for the system calls.
 */
export async function measureCounts(
  ctx: CountsContext,
  o: {
    pid: number;
    redisPid?: number;
    /** Other processes whose CPU to report per request (name → pids). */
    others?: Record<string, number[]>;
    listenPort: number;
    request: CountsRequest;
    rate: number;
    requests: number;
    strace: boolean;
    /**
     * Sequential instead of the fixed rate: one request at a time on one keep-alive connection (no
     * two requests share a socket write, a wake-up or a Redis round trip, so the counts are the code's
     * whatever the machine's load); `rate` is then ignored.
     */
    sequential?: boolean;
  },
): Promise<CountsResult> {
  const seconds = o.requests / o.rate;
  const job = o.sequential
    ? { kind: 'seq', count: o.requests, warmup: 0, ...o.request }
    : { kind: 'rate', rate: o.rate, seconds, sockets: 64, ...o.request };
  // load.ts's seq job answers its samples; the rate job its count.
  const run = async () => {
    const out = await ctx.load<{ requests?: number; errors: number; samples?: number[] }>(job);
    return { ...out, requests: out.requests ?? out.samples?.length ?? 0 };
  };
  await ctx.quiesce();
  const cpu0 = ctx.cpuMs(o.pid);
  const wake0 = wakeups(o.pid);
  const redis0 = o.redisPid ? ctx.cpuMs(o.redisPid) : 0;
  const stats0 = ctx.redisStats();
  const sum = (pids: number[]) => pids.reduce((a, p) => a + ctx.cpuMs(p), 0);
  const others0 = Object.fromEntries(Object.entries(o.others ?? {}).map(([k, pids]) => [k, sum(pids)]));
  const r = await run();
  // The settles and publishes a request leaves behind (≤ 5 ms lingers) and billing's commit.
  await new Promise((res) => setTimeout(res, 1500));
  const result: CountsResult = {
    requests: r.requests,
    errors: r.errors,
    proxyCpuUsPerRequest: Math.round(((ctx.cpuMs(o.pid) - cpu0) * 1000) / r.requests),
  };
  const wake1 = wakeups(o.pid);
  if (wake0 && wake1) {
    result.proxyWakeupsPerRequest = round2((wake1.voluntary - wake0.voluntary) / r.requests);
    result.proxyReadSyscallsPerRequest = round2((wake1.syscr - wake0.syscr) / r.requests);
    result.proxyWriteSyscallsPerRequest = round2((wake1.syscw - wake0.syscw) / r.requests);
  }
  result.otherCpuUsPerRequest = Object.fromEntries(
    Object.entries(o.others ?? {}).map(([k, pids]) => [
      k,
      Math.round(((sum(pids) - (others0[k] ?? 0)) * 1000) / r.requests),
    ]),
  );
  if (o.redisPid)
    result.redisServerCpuUsPerRequest = Math.round(((ctx.cpuMs(o.redisPid) - redis0) * 1000) / r.requests);
  const stats1 = ctx.redisStats();
  if (stats0 && stats1) {
    const cmds: Record<string, number> = {};
    for (const [cmd, a] of stats1) {
      const calls = a.calls - (stats0.get(cmd)?.calls ?? 0);
      if (calls > 0 && cmd !== 'info') cmds[cmd] = round2(calls / r.requests);
    }
    result.redisCommandsPerRequest = cmds;
  }
  if (!o.strace) return result;
  await ctx.quiesce();
  const file = `${ctx.tmp}-strace-${o.pid}-${Date.now()}.txt`;
  const tracer = await startStrace(o.pid, file);
  const running = run();
  // The client sockets close with the load generator: map descriptors while it runs, and again after.
  await new Promise((res) => setTimeout(res, (seconds * 1000) / 2));
  const during = fdPeers(o.pid, o.listenPort, ctx.peers);
  const traced = await running;
  await new Promise((res) => setTimeout(res, 1500));
  const fds = new Map([...fdPeers(o.pid, o.listenPort, ctx.peers), ...during]);
  await new Promise<void>((res) => {
    tracer.once('exit', () => res());
    tracer.kill('SIGINT');
  });
  Object.assign(result, parseStrace(file, o.pid, fds, traced.requests));
  rmSync(file, { force: true });
  return result;
}
