/**
 * `make demo`: bootstraps a demo account against the running dev stack: creates the account (if
 * missing), a management key (admin CLI), $10 of credits, an inference key through the public API
 * with that management key, and a dashboard owner (admin CLI), and prints both keys, a first request
 * and the owner's one-time sign-in link.
 */
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const base = process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080/api/v1';
const account = process.env.DEMO_ACCOUNT ?? 'demo';

function cli(args: string[], allowFailure = false): { data?: Record<string, unknown> } | null {
  try {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'services/keys/src/cli/main.ts', ...args, '--json'],
      {
        cwd: root,
        env: process.env,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', allowFailure ? 'ignore' : 'inherit'],
      },
    );
    return JSON.parse(out) as { data?: Record<string, unknown> };
  } catch (err) {
    if (allowFailure) return null;
    throw err;
  }
}

cli(['accounts', 'create', '--slug', account, '--name', 'Demo account'], true);
const management = cli(['keys', 'create-management', '--account', account, '--name', `demo-${Date.now()}`]);
cli(['credits', 'add', '--account', account, '--amount', '10', '--note', 'demo credits']);
const managementKey = String(management?.data?.key);

const res = await fetch(`${base}/keys`, {
  method: 'POST',
  headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'demo inference key', limit: 5, limit_reset: 'daily' }),
});
const body = (await res.json()) as { data?: { key?: string } };
if (res.status !== 201 || !body.data?.key) {
  console.error(`creating the inference key failed: HTTP ${res.status} ${JSON.stringify(body)}`);
  process.exit(1);
}
const inferenceKey = body.data.key;

// The dashboard's demo owner: a fixed email the first time, a fresh one when it already exists.
const ownerArgs = (email: string) => [
  'users',
  'create',
  '--account',
  account,
  '--email',
  email,
  '--role',
  'owner',
  '--name',
  'Demo owner',
];
const owner =
  cli(ownerArgs(`owner@${account}.example`), true) ??
  cli(ownerArgs(`owner-${Date.now()}@${account}.example`));
const ownerData = owner?.data as { email?: string; sign_in_link?: string } | undefined;

console.log(`
Demo account "${account}" is ready ($10 of credits).

  management key  ${managementKey}
  inference key   ${inferenceKey}   (limit $5/day)

Dashboard         ${ownerData?.sign_in_link ?? '(not created)'}
  Open the link, choose a password (12+ characters), and you are signed in as ${ownerData?.email}.
  Later sign-ins: ${process.env.DASHBOARD_URL ?? 'http://127.0.0.1:8083'} with that email and password.

First request:

  curl ${base}/chat/completions \\
    -H "Authorization: Bearer ${inferenceKey}" -H "Content-Type: application/json" \\
    -d '{"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Hello!"}]}'
`);
