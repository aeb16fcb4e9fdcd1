/**
 * `make dev` (from source, through tsx) and `make start` (`--dist`: the compiled production build,
 * `node dist/main.js` in each service, JSON logs unless LOG_PRETTY=true): creates the development database if missing, starts provider-sim, keys, billing,
 * proxy and the dashboard as separate processes (each migrates its own schema on start) with readable prefixed logs,
 * waits until each answers /readyz, prints the base URL and how to get a first key. Ctrl-C (or
 * SIGTERM) stops every service cleanly.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { devServiceLogins } from './logins';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** `--dist`: run each service's production build (`make start`; `make build` made it). */
const fromDist = process.argv.includes('--dist');

const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/tollgate',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  AMQP_URL: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  REDIS_PREFIX: process.env.REDIS_PREFIX ?? 'tg:',
  AMQP_PREFIX: process.env.AMQP_PREFIX ?? 'tollgate',
  LOG_PRETTY: process.env.LOG_PRETTY ?? (fromDist ? 'false' : 'true'),
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  PROVIDER_SIM_URL: 'http://127.0.0.1:8090',
  KEYS_URL: 'http://127.0.0.1:8081',
  BILLING_URL: 'http://127.0.0.1:8082',
  DASHBOARD_URL: 'http://127.0.0.1:8083',
  CATALOG_PATH: process.env.CATALOG_PATH ?? resolve(root, 'infra/catalog/dev.yaml'),
  SIM_TTFT_MS: process.env.SIM_TTFT_MS ?? '150',
  SIM_INTER_TOKEN_MS: process.env.SIM_INTER_TOKEN_MS ?? '15',
};

/**
 * Settings that belong to one service: exported in the shell they would reach all five (every service
 * signing as the same identity → 401s on internal calls; one metrics port → address in use). `make dev`
 * gives each service its development identity and default metrics port instead, and says so.
 */
const PER_SERVICE = [
  'SERVICE_PRIVATE_KEY',
  'SERVICE_PRIVATE_KEY_FILE',
  'SERVICE_PUBLIC_KEYS',
  'SERVICE_PUBLIC_KEYS_FILE',
  'METRICS_PORT',
] as const;
const inherited: NodeJS.ProcessEnv = { ...process.env };
for (const name of PER_SERVICE) {
  if (inherited[name] === undefined) continue;
  delete inherited[name];
  log('dev', `ignoring ${name} from the shell: it is per service (each gets its development default)`);
}

interface ServiceSpec {
  name: string;
  dir: string;
  port: number;
  color: number;
}

const services: ServiceSpec[] = [
  { name: 'provider-sim', dir: 'services/provider-sim', port: 8090, color: 35 },
  { name: 'keys', dir: 'services/keys', port: 8081, color: 36 },
  { name: 'billing', dir: 'services/billing', port: 8082, color: 33 },
  { name: 'proxy', dir: 'services/proxy', port: 8080, color: 32 },
  { name: 'dashboard', dir: 'services/dashboard', port: 8083, color: 34 },
];

const children: ChildProcess[] = [];
let stopping = false;

async function ensureDatabase(url: string) {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      await client.query(`create database "${name.replaceAll('"', '""')}"`);
      log('dev', `created database ${name}`);
    }
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err; // created concurrently
  } finally {
    await client.end();
  }
}

function log(name: string, line: string, color = 37) {
  process.stdout.write(`\x1b[${color}m${name.padEnd(12)}\x1b[0m| ${line}\n`);
}

/** Each service's own server logins (infra/dev/logins.ts), set before the services start. */
let logins: Record<string, Record<string, string>> = {};

function start(spec: ServiceSpec): ChildProcess {
  const args = fromDist ? ['dist/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  if (fromDist && !existsSync(resolve(root, spec.dir, 'dist/main.js'))) {
    throw new Error(`${spec.dir}/dist/main.js is missing: run \`make build\` first`);
  }
  const child = spawn(process.execPath, args, {
    cwd: resolve(root, spec.dir),
    env: { ...inherited, ...env, ...logins[spec.name], PORT: String(spec.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', (line) => log(spec.name, line, spec.color));
  }
  child.on('exit', (code, signal) => {
    log(spec.name, `exited (${signal ?? code})`, spec.color);
    if (!stopping) void stop(1);
  });
  children.push(child);
  return child;
}

async function waitReady(spec: ServiceSpec, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${spec.port}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${spec.name} did not become ready on port ${spec.port} within ${timeoutMs} ms`);
}

async function stop(code: number) {
  if (stopping) return;
  stopping = true;
  log('dev', 'stopping services...');
  const exits = children
    .filter((c) => c.exitCode === null && c.signalCode === null)
    .map((c) => new Promise<void>((r) => c.once('exit', () => r())));
  for (const c of [...children].reverse()) c.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const c of children) c.kill('SIGKILL');
  }, 10_000);
  await Promise.all(exits);
  clearTimeout(timer);
  log('dev', 'all services stopped');
  // Servers `make servers` started with Docker for this checkout (and only those) stop too.
  spawnSync('bash', [resolve(root, 'infra/dev/stop-servers.sh')], { stdio: 'inherit' });
  process.exit(code);
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

const started = Date.now();
try {
  await ensureDatabase(env.DATABASE_URL);
  logins = await devServiceLogins(env, (line) => log('dev', line, 33));
  for (const spec of services) {
    start(spec);
    await waitReady(spec);
    log('dev', `${spec.name} ready on http://127.0.0.1:${spec.port}`);
  }
} catch (err) {
  log('dev', `failed to start: ${(err as Error).message}`, 31);
  await stop(1);
}

const base = 'http://127.0.0.1:8080/api/v1';
process.stdout.write(`
  Tollgate is running${fromDist ? ' from the production build (dist/)' : ''} (started in ${((Date.now() - started) / 1000).toFixed(1)} s).

    Base URL        ${base}   (also served under http://127.0.0.1:8080/v1)
    Models          curl ${base}/models -H "Authorization: Bearer <inference key>"
    Dashboard       ${env.DASHBOARD_URL}   (sign in: make demo prints a one-time sign-in link)
    First key       make demo        (in another terminal: account, credits, keys, dashboard owner)

  Ctrl-C stops everything.

`);
