import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { toUnits } from '@tollgate/money';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyUnderTest, Outcome } from './faults/harness';
import { childrenOf, clientPortsByProcess, listensOn } from './support/proc-sockets';
import { type ProxyProcess, startProxyProcess } from './support/proxy-process';
import { MODEL, type Stack, startStack } from './support/stack';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The proxy with `WORKERS` = 2 as production starts it (services/proxy/src/main.ts: a cluster
 * primary that forks two workers, each listening on its own SO_REUSEPORT socket of the port),
 * against the test kit's Redis, RabbitMQ and Postgres, with keys, billing and the provider simulator
 * of a root test stack (tests/support/stack.ts, in this process). Which worker holds a connection is read from
 * /proc (Linux only): the client's port of each connection, in the fd table of the worker that
 * accepted it.
 */
const WORKERS = 2;
/** A stream of ~6 s (40 tokens, 150 ms apart): open long enough to be seen on its worker. */
const SLOW = { completion_tokens: 40, inter_token_ms: 150 };
/** Clients sending JSON requests (one at a time each, keep-alive) while a killed worker is replaced. */
const CLIENTS = 4;
/** Whether the kernel hands a closed listener's queued connections to another socket of its group. */
const migrates = (() => {
  try {
    return readFileSync('/proc/sys/net/ipv4/tcp_migrate_req', 'utf8').trim() === '1';
  } catch {
    return false;
  }
})();

interface Streamed {
  outcome: Outcome;
  /** The client side's port of the stream's connection (known once it is connected). */
  localPort: Promise<number>;
  /** Resolves when the response headers arrive. */
  headers: Promise<void>;
  done: Promise<Outcome>;
}

/** One streamed chat completion on a connection of its own (node:http, no pool): what the client saw. */
function stream(port: number, k: KeyUnderTest, sim: Record<string, unknown>): Streamed {
  const o: Outcome = { status: 0, streamed: true, keyId: k.id, startedAt: Date.now(), endedAt: 0 };
  const payload = JSON.stringify({
    model: MODEL,
    stream: true,
    max_tokens: sim.completion_tokens,
    messages: [{ role: 'user', content: `workers ${randomBytes(4).toString('hex')}` }],
    sim,
  });
  let localPort: (p: number) => void = () => {};
  let headers: () => void = () => {};
  const portP = new Promise<number>((r) => {
    localPort = r;
  });
  const headersP = new Promise<void>((r) => {
    headers = r;
  });
  const done = new Promise<Outcome>((resolve) => {
    const finish = (error?: string) => {
      if (error) o.transportError = error;
      o.endedAt = Date.now();
      headers();
      localPort(0);
      resolve(o);
    };
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/api/v1/chat/completions',
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${k.key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        o.status = res.statusCode ?? 0;
        headers();
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
        res.on('aborted', () => finish('aborted'));
        res.on('end', () => {
          if (o.status !== 200) o.refusal = text.slice(0, 300);
          else parseStream(text, o);
          finish();
        });
      },
    );
    req.on('socket', (s) => s.once('connect', () => localPort(s.localPort ?? 0)));
    req.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
    req.end(payload);
  });
  return { outcome: o, localPort: portP, headers: headersP, done };
}

/** The id, cost, error chunk and [DONE] of a whole SSE answer (as the fault harness reads them). */
function parseStream(text: string, o: Outcome): void {
  for (const line of text.split('\n')) {
    if (line === 'data: [DONE]') o.done = true;
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as { id?: string; usage?: { cost?: unknown }; error?: unknown };
    if (chunk.id) o.id = chunk.id;
    if (chunk.usage?.cost !== undefined) o.cost = String(chunk.usage.cost);
    if (chunk.error) o.errorChunk = true;
  }
}

async function waitFor<T>(
  what: string,
  probe: () => T | null | undefined,
  ms = 45_000,
  detail: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${detail()}`);
    await sleep(50);
  }
}

/** One JSON chat completion (fetch: pooled keep-alive connections, as most clients send). */
async function jsonRequest(port: number, k: KeyUnderTest): Promise<Outcome> {
  const o: Outcome = { status: 0, streamed: false, keyId: k.id, startedAt: Date.now(), endedAt: 0 };
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'workers' }] }),
    });
    o.status = res.status;
    const text = await res.text();
    if (res.status === 200) {
      const body = JSON.parse(text) as { id: string; usage?: { cost?: unknown } };
      o.id = body.id;
      o.cost = body.usage?.cost === undefined ? undefined : String(body.usage.cost);
    } else o.refusal = text.slice(0, 300);
  } catch (err) {
    o.transportError = String(
      (err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message,
    );
  }
  o.endedAt = Date.now();
  return o;
}

describe.skipIf(process.platform !== 'linux')(`the proxy with WORKERS=${WORKERS} (SO_REUSEPORT)`, () => {
  let stack: Stack;
  let proxy: ProxyProcess;
  let k: KeyUnderTest;
  /** Every answer of the file: reconciled with billing at the end. */
  const outcomes: Outcome[] = [];
  const port = () => proxy.port;
  /** The workers listening on the port (their primary is the spawned process). */
  const serving = () => childrenOf(proxy.child.pid as number).filter((p) => listensOn(p, port()));
  const bothServing = () =>
    waitFor('every worker listening', () => {
      const w = serving();
      return w.length === WORKERS ? w : null;
    });

  /** `count` slow streams, each on its own connection, once every one is answered (headers). */
  async function openStreams(count: number): Promise<Streamed[]> {
    const streams = Array.from({ length: count }, () => stream(port(), k, SLOW));
    await Promise.all(streams.map((s) => s.headers));
    return streams;
  }

  /** Which worker serves each stream (by its connection's client port). */
  async function workerOf(streams: Streamed[], workers: number[]): Promise<Array<number | undefined>> {
    const byWorker = clientPortsByProcess(port(), workers);
    const ports = await Promise.all(streams.map((s) => s.localPort));
    return ports.map((p) => workers.find((w) => byWorker.get(w)?.has(p)));
  }

  beforeAll(async () => {
    stack = await startStack({ credits: '1000' });
    k = { key: stack.inferenceKey, id: stack.inferenceKeyId, accountId: stack.account.id, limit: null };
    proxy = await startProxyProcess(stack, { WORKERS: String(WORKERS), SHUTDOWN_TIMEOUT_MS: '30000' });
    // A stack and three proxy processes: well over the default hook timeout on a loaded machine.
  }, 300_000);
  afterAll(async () => {
    await proxy?.close();
    await stack?.close();
  });

  it('serves requests through every worker, each on its own listening socket', async () => {
    const workers = await bothServing();
    // 24 connections: all on one worker by chance 2 × 2^-24 of the time.
    const streams = await openStreams(24);
    const served = await workerOf(streams, workers);
    const done = await Promise.all(streams.map((s) => s.done));
    outcomes.push(...done);
    const per = workers.map((w) => served.filter((s) => s === w).length);
    process.stdout.write(`[workers] 24 streams per worker: ${per.join(' / ')}\n`);
    expect(served.every((w) => w !== undefined)).toBe(true);
    for (const n of per) expect(n).toBeGreaterThan(0);
    for (const o of done) {
      expect(o.transportError).toBeUndefined();
      expect(o.status).toBe(200);
      expect(o.done).toBe(true);
      expect(o.errorChunk).toBeUndefined();
    }
  }, 60_000);

  it('restarts a SIGKILLed worker while the other keeps answering', async () => {
    const workers = await bothServing();
    const streams = await openStreams(12);
    const on = await workerOf(streams, workers);
    const victim = workers.find((w) => on.includes(w)) as number;
    let replacement: number | undefined;
    let sentAfter = 0;
    const json: Outcome[] = [];
    process.kill(victim, 'SIGKILL');
    const killedAt = Date.now();
    // Clients send JSON requests while the worker is replaced, and 40 more once it listens.
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (sentAfter < 40) {
        if (replacement !== undefined) sentAfter++;
        json.push(await jsonRequest(port(), k));
        // Paced: the replacement worker starts on the same (possibly loaded) cores.
        await sleep(50);
      }
    });
    replacement = await waitFor(
      'a new worker listening',
      () => serving().find((p) => !workers.includes(p)),
      // Seconds on a quiet machine; a worker's start (tsx, every module) took 51 s at load average 33.
      150_000,
      () => proxy.tail.join('\n'),
    );
    const replacedMs = Date.now() - killedAt;
    await Promise.all(clients);
    const done = await Promise.all(streams.map((s) => s.done));
    outcomes.push(...done, ...json);
    const failed = json.filter((o) => o.status !== 200);
    const cut = on.filter((w) => w === victim);
    process.stdout.write(
      `[workers] SIGKILL of a worker with ${cut.length} of 12 streams: replacement listening after ${replacedMs} ms; ` +
        `${json.length} JSON requests meanwhile, ${failed.length} failed ${JSON.stringify(failed.map((o) => o.transportError ?? o.status))}\n`,
    );
    // The killed worker's streams are cut (a transport error, never a complete-looking answer); the
    // other worker's finish.
    for (const [i, o] of done.entries()) {
      if (on[i] === victim) expect(o.done && o.transportError === undefined).toBeFalsy();
      else expect(o).toMatchObject({ status: 200, done: true });
    }
    // Connections the kernel queued on the killed worker's socket between the SIGKILL and its death
    // are reset with it (each client at most once: it then connects again, to a live socket), unless
    // the kernel migrates them to another worker's socket (net.ipv4.tcp_migrate_req = 1,
    // docs/operations.md "Workers"). Anything else (a 5xx, a refused connection) is a failure.
    // (undici reports a FIN from the dying worker as UND_ERR_SOCKET, "other side closed"; an RST as ECONNRESET.)
    for (const o of failed)
      expect(o.transportError).toMatch(/ECONNRESET|UND_ERR_SOCKET|other side closed|socket hang up/);
    expect(failed.length).toBeLessThanOrEqual(migrates ? 0 : CLIENTS);
    // Both serve again.
    const again = await openStreams(24);
    const servedAgain = await workerOf(again, [...workers.filter((w) => w !== victim), replacement]);
    outcomes.push(...(await Promise.all(again.map((s) => s.done))));
    expect(new Set(servedAgain).size).toBe(WORKERS);
  }, 240_000);

  it('drains in-flight streams on SIGTERM and exits 0', async () => {
    await bothServing();
    const streams = await openStreams(16);
    proxy.child.kill('SIGTERM');
    const exit = await Promise.race([proxy.exited, sleep(45_000).then(() => null)]);
    const done = await Promise.all(streams.map((s) => s.done));
    outcomes.push(...done);
    expect(exit).toEqual({ code: 0, signal: null });
    for (const o of done) {
      expect(o.transportError).toBeUndefined();
      expect(o).toMatchObject({ status: 200, done: true });
      expect(o.errorChunk).toBeUndefined();
    }
    expect(proxy.spooledSegments()).toEqual([]);
  }, 60_000);

  it('bills every answer exactly once, whichever worker served it', async () => {
    const served = outcomes.filter((o) => o.status === 200 && o.id && o.transportError === undefined);
    const unseen = outcomes.length - served.length;
    const pool = new pg.Pool({ connectionString: stack.infra.database.url, max: 2 });
    try {
      const ids = served.map((o) => o.id as string);
      let rows: Array<{ id: string; total_cost: string }> = [];
      // Billing commits asynchronously: up to 60 s for the last records.
      for (let i = 0; i < 240 && rows.filter((r) => ids.includes(r.id)).length < ids.length; i++) {
        rows = (
          await pool.query<{ id: string; total_cost: string }>(
            'select id, total_cost from billing.generations where account_id = $1',
            [k.accountId],
          )
        ).rows;
        await sleep(250);
      }
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(new Set(ids).size).toBe(ids.length);
      const missing = ids.filter((id) => !byId.has(id));
      expect(missing).toEqual([]);
      for (const o of served)
        expect(toUnits(byId.get(o.id as string)?.total_cost ?? '-1')).toBe(toUnits(o.cost ?? '-2'));
      // Records of answers no client saw whole: at most the streams cut with their worker.
      expect(rows.length - ids.length).toBeLessThanOrEqual(unseen);
      const spend = await pool.query<{ amount: string }>(
        `select amount from billing.key_spend where key_id = $1 and period = 'all'`,
        [k.id],
      );
      const sum = rows.reduce((a, r) => a + toUnits(r.total_cost), 0n);
      expect(toUnits(spend.rows[0]?.amount ?? '0')).toBe(sum);
      process.stdout.write(`[workers] ${served.length} answers billed once each (${unseen} cut or failed)\n`);
    } finally {
      await pool.end();
    }
  }, 90_000);
});
