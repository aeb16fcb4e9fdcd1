import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs the real Claude Code CLI (`@anthropic-ai/claude-code`, a root devDependency, exact version)
 * headless, the way README.md documents it: `claude -p <prompt> --dangerously-skip-permissions
 * --model <id>` with `ANTHROPIC_BASE_URL=<origin>/api` and `ANTHROPIC_AUTH_TOKEN=<key>`, in a
 * temporary HOME and working directory. `IS_SANDBOX=1` lets it skip permissions as root;
 * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` keeps it from calling anything but the gateway.
 *
 * The package's postinstall (which copies the platform binary over its launcher) does not run under
 * this workspace's pnpm settings (pnpm-workspace.yaml), so the CLI is started through the package's
 * own `cli-wrapper.cjs`, which finds the platform package's binary and runs it.
 */
const WRAPPER = join(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '@anthropic-ai',
  'claude-code',
  'cli-wrapper.cjs',
);

export interface ClaudeRun {
  /** Exit status (0: the agent finished its turn). */
  code: number;
  /** What it printed: the final answer, or the error it shows its user. */
  stdout: string;
  stderr: string;
}

export async function runClaudeCode(opts: {
  /** The gateway's origin (`http://127.0.0.1:<port>`): the base URL is `<origin>/api`. */
  origin: string;
  apiKey: string;
  model: string;
  prompt: string;
  timeoutMs?: number;
  /** Extra environment (e.g. `ANTHROPIC_API_KEY` instead of the auth token). */
  env?: Record<string, string>;
}): Promise<ClaudeRun> {
  const home = await mkdtemp(join(tmpdir(), 'tollgate-claude-home-'));
  const work = await mkdtemp(join(tmpdir(), 'tollgate-claude-work-'));
  try {
    const args = [WRAPPER, '-p', opts.prompt, '--dangerously-skip-permissions', '--model', opts.model];
    return await new Promise<ClaudeRun>((resolve) => {
      execFile(
        process.execPath,
        args,
        {
          cwd: work,
          timeout: opts.timeoutMs ?? 60_000,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: home,
            IS_SANDBOX: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            DISABLE_AUTOUPDATER: '1',
            ANTHROPIC_BASE_URL: `${opts.origin}/api`,
            ANTHROPIC_AUTH_TOKEN: opts.apiKey,
            ...opts.env,
          },
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
    });
  } finally {
    await Promise.all([
      rm(home, { recursive: true, force: true }),
      rm(work, { recursive: true, force: true }),
    ]);
  }
}
