/**
 * `make demo`: bootstraps a demo account against the running dev stack with the admin CLI's
 * `demo bootstrap` (services/keys/src/cli/demo.commands.ts — also the `demo` step of
 * `docker compose up`): the account "demo" (DEMO_ACCOUNT) with $10 of credits when it is new, a
 * management key, an inference key created through the gateway's public API (TOLLGATE_URL, default
 * http://127.0.0.1:8080/api/v1), and a dashboard owner with a one-time sign-in link; prints them and a
 * first request.
 */
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = ['demo', 'bootstrap', '--account', process.env.DEMO_ACCOUNT ?? 'demo'];
if (process.env.TOLLGATE_URL) args.push('--proxy-url', process.env.TOLLGATE_URL);
const run = spawnSync(process.execPath, ['--import', 'tsx', 'services/keys/src/cli/main.ts', ...args], {
  cwd: root,
  env: process.env,
  stdio: 'inherit',
});
process.exitCode = run.status ?? 1;
