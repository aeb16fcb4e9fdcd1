/**
 * Runtime settings of the proxy's processes (issue 11: RSS at 10,000 open streams). Both act when a
 * process starts, so they live where a process is started: the Docker image's `ENV` (`NODE_OPTIONS`,
 * `MALLOC_ARENA_MAX`; the Dockerfile's `service-proxy` stage, checked against these by runtime.test.ts), and a
 * cluster primary's `fork` of its workers (main.ts), so `WORKERS` > 1 gets them from a plain
 * `node dist/main.js` too. A setting the operator gave (the flag on the command line or in
 * `NODE_OPTIONS`, the variable in the environment) is left as it is. Measured in bench/README.md
 * ("Proxy memory at 10,000 open streams") and docs/operations.md ("Proxy memory").
 *
 * - `--max-semi-space-size=32`: V8's young generation (two semi-spaces) grows under sustained load to
 *   its maximum and stays there while allocation goes on; on 64-bit Node 24 (no pointer compression)
 *   that is 2 × 64 MB per process. 32 MB semi-spaces hold 64 MB: a scavenge every ≈ 300 requests at
 *   ≈ 108 KB allocated per request instead of ≈ 600. (2 MB cost +18 % CPU per request; see the README.)
 * - `MALLOC_ARENA_MAX=2`: glibc gives each thread that allocates its own malloc arena (up to 8 per core);
 *   V8's GC helpers and libuv's pool threads held 17–25 MB of arenas per proxy process. Two arenas
 *   (the main thread's and one shared by the helper threads) held 3–12 MB.
 */
export const SEMI_SPACE_FLAG = '--max-semi-space-size';
export const SEMI_SPACE_MB = 32;
export const MALLOC_ARENA_MAX = '2';

/** The node options and environment the proxy's processes run with: `given` plus what it lacks. */
export function processSettings(given: { execArgv: readonly string[]; env: NodeJS.ProcessEnv }): {
  execArgv: string[];
  env: Record<string, string>;
} {
  const flagGiven = [...given.execArgv, ...(given.env.NODE_OPTIONS ?? '').split(/\s+/)].some(
    // V8 spells its flags with `-` or `_`.
    (a) => a.replaceAll('_', '-').split('=')[0] === SEMI_SPACE_FLAG,
  );
  return {
    execArgv: flagGiven ? [...given.execArgv] : [...given.execArgv, `${SEMI_SPACE_FLAG}=${SEMI_SPACE_MB}`],
    env: given.env.MALLOC_ARENA_MAX === undefined ? { MALLOC_ARENA_MAX } : {},
  };
}
