/**
 * Private servers for the scenarios that restart a server for real: a `redis-server` and a
 * PostgreSQL cluster (initdb + pg_ctl into a temp dir) on free ports, owned by the test alone. The
 * shared 127.0.0.1 servers other jobs use are never stopped.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@tollgate/testkit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { sleep } from './harness';

export interface PrivateRedis {
  port: number;
  url: string;
  /** SIGKILL (nothing saved: the restart is empty). */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** FAULTS_NO_PRIVATE_SERVERS=1 runs the scenarios' fallbacks (as where the binaries are missing). */
const refused = () => {
  if (process.env.FAULTS_NO_PRIVATE_SERVERS === '1') throw new Error('FAULTS_NO_PRIVATE_SERVERS=1');
};

/** `redis-server --port N --save "" --appendonly no`: no persistence, so a restart is empty. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  refused();
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    let spawnError: Error | null = null;
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    child.once('error', (err) => {
      spawnError = err;
    });
    const probe = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => {});
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') break;
      } catch {
        // not listening yet
      }
      probe.disconnect();
      if (spawnError) throw spawnError;
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} not up within 10 s`);
      await sleep(50);
    }
    probe.disconnect();
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, kill, start, close: kill };
}

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** `pg_ctl stop -m fast` (clients are disconnected, the server shuts down cleanly). */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL binaries under ${base}`);
  return join(base, versions[0] as string, 'bin');
}

/** initdb refuses root: run the binaries as the `postgres` user when we are root. */
function asPgUser(cmd: string, args: string[]): { file: string; args: string[] } {
  if (process.getuid?.() !== 0) return { file: cmd, args };
  return { file: 'runuser', args: ['-u', 'postgres', '--', cmd, ...args] };
}

/**
 * A throwaway cluster: trust auth on 127.0.0.1, fsync off (a test database), its own socket dir.
 * Returns once it accepts connections.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  refused();
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = await freePort();
  // Asynchronous: the load generator of the same process keeps running while the server stops.
  const run = async (cmd: string, args: string[]) => {
    const c = asPgUser(join(bin, cmd), args);
    await promisify(execFile)(c.file, c.args, { timeout: 60_000 });
  };
  await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const start = async () => {
    await run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', '-t', '30', 'start']);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.end();
        return;
      } catch {
        await c.end().catch(() => {});
      }
      if (Date.now() > deadline) throw new Error(`private postgres on ${port} not up within 30 s`);
      await sleep(100);
    }
  };
  const stop = async () => {
    await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
  };
  await start();
  return {
    port,
    url,
    stop,
    start,
    async close() {
      try {
        await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
