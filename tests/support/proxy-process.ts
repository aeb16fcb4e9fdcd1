import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { configEnv } from '@tollgate/proxy';
import { freePort } from '@tollgate/testkit';
import type { Stack } from './stack';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

/**
 * A proxy as its own process, started the way production starts it (services/proxy/src/main.ts, the
 * entry of the image; here through tsx), with the settings of a root test stack's proxy (its Redis
 * prefix, RabbitMQ names, keys and billing, the stack's simulator) plus `env` (e.g. `WORKERS`), and
 * optionally a lower limit of open files (`ulimit -n`, soft and hard, before node starts).
 */
export interface ProxyProcess {
  child: ChildProcess;
  port: number;
  url: string;
  metricsPort: number;
  spoolDir: string;
  /** The last lines of its output (for failure messages). */
  tail: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Usage segments left on its spool (events not confirmed by RabbitMQ at exit). */
  spooledSegments(): string[];
  /** SIGTERM (SIGKILL after 30 s), then removes its spool directory. */
  close(): Promise<void>;
}

export async function startProxyProcess(
  stack: Stack,
  env: Record<string, string> = {},
  options: { openFiles?: number } = {},
): Promise<ProxyProcess> {
  const port = await freePort();
  const metricsPort = await freePort();
  const spoolDir = mkdtempSync(join(tmpdir(), 'tollgate-proxy-spool-'));
  const node = [process.execPath, '--import', 'tsx', 'src/main.ts'];
  const [file, ...args] = options.openFiles
    ? ['bash', '-c', `ulimit -n ${options.openFiles} && exec "$@"`, 'bash', ...node]
    : node;
  const child = spawn(file as string, args, {
    cwd: resolve(root, 'services/proxy'),
    env: {
      ...process.env,
      ...configEnv(stack.proxyConfig),
      PROVIDER_SIM_URL: stack.services.sim.url,
      LOG_LEVEL: process.env.STACK_LOG_LEVEL ?? 'warn',
      LOG_PRETTY: 'false',
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      SPOOL_DIR: spoolDir,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  for (const s of [child.stdout, child.stderr]) {
    createInterface({ input: s }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 60) tail.shift();
      if (process.env.STACK_LOG_LEVEL) process.stdout.write(`proxy| ${line}\n`);
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`proxy exited during start:\n${tail.join('\n')}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL'); // never leave a half-started proxy (and its workers, which exit with it) behind
      throw new Error(`proxy not ready within 180 s:\n${tail.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const spooledSegments = () => {
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name.endsWith('.spool')) out.push(join(dir, e.name));
      }
    };
    walk(spoolDir);
    return out;
  };
  return {
    child,
    port,
    url,
    metricsPort,
    spoolDir,
    tail,
    exited,
    spooledSegments,
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(spoolDir, { recursive: true, force: true });
    },
  };
}
