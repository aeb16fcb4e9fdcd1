/**
 * Runs one phase of bench/compare.ts — the whole stack as `make bench` starts it (production build,
 * every guard on, private redis-server) — as a child process with this process's environment plus
 * `env`, its output on this process's stdout/stderr. `proxyB` (another build's main.js, relative to
 * services/proxy) becomes BENCH_PROXY_B: a second proxy `tollgate-b` interleaved with this build.
 * Used by the per-request diagnostics (bench/cpu-per-request.ts, bench/alloc-per-request.ts).
 * Resolves to the child's exit code.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function runCompare(env: Record<string, string>, proxyB?: string): Promise<number | null> {
  return new Promise<number | null>((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/compare.ts')], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, ...env, ...(proxyB ? { BENCH_PROXY_B: proxyB } : {}) },
    });
    child.once('exit', done);
  });
}
