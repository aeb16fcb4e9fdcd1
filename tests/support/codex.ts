import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs the real Codex CLI (`@openai/codex`, a root devDependency; its platform binary comes from npm)
 * headless: `codex exec` with a temporary CODEX_HOME whose config.toml points a `responses` provider
 * at `baseUrl` (the gateway's /api/v1, or the simulator), the key in an environment variable, in a
 * temporary working directory, with approvals and the sandbox off (the test's command is harmless).
 */

const CODEX_BIN = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'codex');

export interface CodexRun {
  /** Exit status (0: the agent finished its turn). */
  code: number;
  stdout: string;
  stderr: string;
  /** The agent's final message (`--output-last-message`). */
  lastMessage: string;
}

/** The config.toml block README.md and docs/api.md document, for `baseUrl` and `model`. */
function codexConfig(baseUrl: string, model: string): string {
  return [
    `model = ${JSON.stringify(model)}`,
    'model_provider = "tollgate"',
    '',
    '[model_providers.tollgate]',
    'name = "Tollgate"',
    `base_url = ${JSON.stringify(baseUrl)}`,
    'wire_api = "responses"',
    'env_key = "TOLLGATE_API_KEY"',
    // A test fails on the first error instead of retrying it five times.
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

export async function runCodex(opts: {
  baseUrl: string;
  apiKey: string;
  model: string;
  prompt: string;
  timeoutMs?: number;
}): Promise<CodexRun> {
  const home = await mkdtemp(join(tmpdir(), 'tollgate-codex-home-'));
  const work = await mkdtemp(join(tmpdir(), 'tollgate-codex-work-'));
  try {
    await writeFile(join(home, 'config.toml'), codexConfig(opts.baseUrl, opts.model));
    const last = join(home, 'last-message.txt');
    const args = [
      'exec',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '--ephemeral',
      '-C',
      work,
      '-o',
      last,
      opts.prompt,
    ];
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
      (resolve) => {
        const child = execFile(
          CODEX_BIN,
          args,
          {
            cwd: work,
            timeout: opts.timeoutMs ?? 60_000,
            env: {
              PATH: process.env.PATH ?? '/usr/bin:/bin',
              HOME: home,
              CODEX_HOME: home,
              TOLLGATE_API_KEY: opts.apiKey,
            },
          },
          (err, out, errOut) => {
            const status = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
            resolve({ code: status, stdout: String(out), stderr: String(errOut) });
          },
        );
        child.stdin?.end();
      },
    );
    const lastMessage = await readFile(last, 'utf8').catch(() => '');
    return { code, stdout, stderr, lastMessage };
  } finally {
    await rm(home, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}
