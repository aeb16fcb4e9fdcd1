/**
 * Static checks of docker-compose.yml and the one Dockerfile (there is no Docker engine in CI): every
 * service builds from it with `SERVICE=<name>` (node:24, multi-stage, running as a non-root user), gets every
 * variable its own config schema needs, talks to the others by compose service name and the right
 * port, waits for healthy dependencies, and the proxy is published on 8080.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServiceSigner, createServiceVerifier, DEV_SERVICE_KEYS, SERVICE_NAMES } from '@tollgate/auth';
import { loadCatalog, substituteEnv } from '@tollgate/catalog';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { billingConfigSchema, loadConfig as loadBillingConfig } from '../services/billing/src/config';
import { dashboardEnv, loadConfig as loadDashboardConfig } from '../services/dashboard/src/config';
import { keysConfigSchema, loadConfig as loadKeysConfig } from '../services/keys/src/config';
import {
  loadConfig as loadSimConfig,
  configSchema as simConfigSchema,
} from '../services/provider-sim/src/config';
import { loadConfig as loadProxyConfig, proxyEnv } from '../services/proxy/src/config';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string } | string;
  environment?: Record<string, string | number | boolean> | string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  ports?: Array<string | { target: number; published: string | number }>;
  volumes?: Array<string | { type: string; source: string; target: string; read_only?: boolean }>;
  healthcheck?: { test: string[] | string; disable?: boolean };
  user?: string;
}

const composeText = readFileSync(resolve(root, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;

/** The shell environment compose needs: nothing (the service keys are generated on first start). */
const SHELL: Record<string, string> = {};
const REQUIRED = /\$\{([A-Za-z_][A-Za-z0-9_]*):\?[^}]*\}/g;

/** Compose-style interpolation with the shell environment above: `${VAR:-default}` → default. */
function interpolate(value: string): string {
  const required = value.replace(REQUIRED, (_m, name: string) => {
    const v = SHELL[name];
    if (!v) throw new Error(`compose requires ${name} from the shell`);
    return v;
  });
  const { value: out, missing } = substituteEnv(required, SHELL);
  if (missing.length) throw new Error(`compose needs ${missing.join(', ')} from the shell: ${value}`);
  return out;
}

function environment(name: string): Record<string, string> {
  const env = services[name]?.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((e) => {
        const i = e.indexOf('=');
        return [e.slice(0, i), e.slice(i + 1)] as const;
      })
    : Object.entries(env).map(([k, v]) => [k, String(v)] as const);
  return Object.fromEntries(entries.map(([k, v]) => [k, interpolate(v)]));
}

/**
 * The volumes as `docker compose up` fills them: the `service-keys` step's own script run into a
 * temporary directory laid out like its mounts (volume name → directory).
 */
const volumesDir = mkdtempSync(join(tmpdir(), 'tollgate-compose-'));
afterAll(() => rmSync(volumesDir, { recursive: true, force: true }));
const keygen = services['service-keys'];
const keygenCommand = (keygen as { command?: string[] } | undefined)?.command ?? [];
const volumeDirs = new Map<string, string>();
function mountsOf(name: string): Array<{ source: string; target: string; readOnly: boolean }> {
  return (services[name]?.volumes ?? []).map((v) => {
    const [source = '', target = '', mode = ''] =
      typeof v === 'string' ? v.split(':') : [v.source, v.target, v.read_only ? 'ro' : ''];
    return { source, target, readOnly: mode === 'ro' };
  });
}
function generateComposeKeys() {
  if (volumeDirs.size) return;
  const dirArg = keygenCommand[keygenCommand.indexOf('--dir') + 1] ?? '';
  const script = mountsOf('service-keys').find((m) => keygenCommand[1]?.startsWith(`${m.target}/`));
  if (!script) throw new Error('service-keys runs no script from a mounted directory');
  const scriptPath = resolve(root, script.source, keygenCommand[1]!.slice(script.target.length + 1));
  for (const m of mountsOf('service-keys')) {
    if (m.target.startsWith(`${dirArg}/`))
      volumeDirs.set(m.source, join(volumesDir, m.target.slice(dirArg.length + 1)));
  }
  execFileSync(process.execPath, [scriptPath, '--dir', volumesDir]);
}

/** A service's environment with each `*_FILE` path read through its volume mounts (as in the container). */
function resolvedEnvironment(name: string): Record<string, string> {
  generateComposeKeys();
  const env = environment(name);
  for (const [key, path] of Object.entries(env)) {
    if (!key.endsWith('_FILE')) continue;
    const mount = mountsOf(name).find((m) => path.startsWith(`${m.target}/`));
    const dir = mount && volumeDirs.get(mount.source);
    if (!dir) throw new Error(`${name} ${key}=${path} is not on a volume service-keys writes`);
    env[key] = join(dir, path.slice(mount.target.length + 1));
  }
  return env;
}

/**
 * A service's environment as the service sees it: each server URL given as `<NAME>_URL_FILE` (its own
 * login, generated on first start) read from the file service-keys wrote.
 */
function effectiveEnvironment(name: string): Record<string, string> {
  const env = environment(name);
  if (!Object.keys(env).some((k) => /_URL_FILE$/.test(k))) return env;
  const resolved = resolvedEnvironment(name);
  for (const [key, path] of Object.entries(resolved)) {
    if (!/_URL_FILE$/.test(key)) continue;
    env[key.slice(0, -'_FILE'.length)] = readFileSync(path, 'utf8').trim();
    delete env[key];
  }
  return env;
}

/** The part of a zod object schema these checks use (each service's env schema). */
interface EnvField {
  safeParse(value: unknown): { success: boolean; data?: unknown };
}
interface EnvSchema {
  shape: Record<string, EnvField>;
}

interface StackService {
  name: string;
  pkg: string;
  port: number;
  schema: EnvSchema;
  load: (env: NodeJS.ProcessEnv) => unknown;
}

const stack: StackService[] = [
  { name: 'keys', pkg: '@tollgate/keys', port: 8081, schema: keysConfigSchema, load: loadKeysConfig },
  {
    name: 'billing',
    pkg: '@tollgate/billing',
    port: 8082,
    schema: billingConfigSchema,
    load: loadBillingConfig,
  },
  {
    name: 'provider-sim',
    pkg: '@tollgate/provider-sim',
    port: 8090,
    schema: simConfigSchema,
    load: loadSimConfig,
  },
  { name: 'proxy', pkg: '@tollgate/proxy', port: 8080, schema: proxyEnv, load: loadProxyConfig },
  {
    name: 'dashboard',
    pkg: '@tollgate/dashboard',
    port: 8083,
    schema: dashboardEnv,
    load: loadDashboardConfig,
  },
];

const infra: Record<string, { image: RegExp; port: number }> = {
  postgres: { image: /^postgres:16(\b|-)/, port: 5432 },
  redis: { image: /^redis:7(\b|-|\.)/, port: 6379 },
  rabbitmq: { image: /^rabbitmq:3\.13-management/, port: 5672 },
};

/** The one Dockerfile a compose service builds from, with its build arguments (`SERVICE`). */
function dockerfileOf(service: ComposeService): { path: string; text: string; args: Record<string, string> } {
  const build = typeof service.build === 'string' ? { context: service.build } : service.build;
  if (!build) throw new Error('service has no build section');
  const path = resolve(root, build.context, build.dockerfile ?? 'Dockerfile');
  const args = Object.fromEntries(
    Object.entries((build as { args?: Record<string, string | number> }).args ?? {}).map(([k, v]) => [
      k,
      String(v),
    ]),
  );
  return { path, text: existsSync(path) ? readFileSync(path, 'utf8') : '', args };
}

type Instruction = { op: string; args: string };

/** Instructions of a Dockerfile with continuation lines joined and comments dropped. */
function instructions(text: string): Instruction[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op = '', ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

interface Stage {
  name: string;
  from: string;
  body: Instruction[];
}

/**
 * The stages of a Dockerfile as `docker build` with these build arguments sees them: global ARG
 * defaults (overridden by the build arguments) substituted in FROM and in each stage's `ARG`ed names.
 */
function stages(text: string, buildArgs: Record<string, string> = {}): Stage[] {
  const global: Record<string, string> = {};
  const out: Stage[] = [];
  const subst = (value: string, vars: Record<string, string>) =>
    value.replace(/\$\{?(\w+)\}?/g, (m, n: string) => vars[n] ?? (n in vars ? '' : m));
  let scope: Record<string, string> = {};
  for (const ins of instructions(text)) {
    if (ins.op === 'ARG' && out.length === 0) {
      const [k = '', v = ''] = ins.args.split('=');
      global[k] = buildArgs[k] ?? v;
    } else if (ins.op === 'FROM') {
      const [image = '', , name = ''] = ins.args.split(/\s+/);
      out.push({ name, from: subst(image, global), body: [] });
      scope = {};
    } else if (ins.op === 'ARG') {
      const [k = '', v = ''] = ins.args.split('=');
      scope[k] = buildArgs[k] ?? global[k] ?? v;
      out.at(-1)?.body.push(ins);
    } else {
      out.at(-1)?.body.push({ op: ins.op, args: subst(ins.args, scope) });
    }
  }
  return out;
}

/** A stage with the stages it builds on (FROM <stage>), outermost first, and the image at the root. */
function lineage(all: Stage[], stage: Stage): { image: string; chain: Stage[] } {
  const chain = [stage];
  for (let s = stage; ; ) {
    const parent = all.find((x) => x.name === s.from);
    if (!parent) return { image: s.from, chain };
    chain.unshift(parent);
    s = parent;
  }
}

/** The runtime stage of a service's image (the last stage) with everything it inherits. */
function runtimeOf(service: ComposeService): { image: string; body: Instruction[] } {
  const { text, args } = dockerfileOf(service);
  const all = stages(text, args);
  const { image, chain } = lineage(all, all.at(-1)!);
  return { image, body: chain.flatMap((s) => s.body) };
}

/** The ENV a stage body sets (later ones win). */
function envOf(body: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of body.filter((i) => i.op === 'ENV'))
    for (const m of ins.args.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  return env;
}

function urlHostPort(value: string): { host: string; port: number } | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return null;
  const u = new URL(value);
  const defaults: Record<string, number> = { 'http:': 80, 'https:': 443, 'amqp:': 5672, 'redis:': 6379 };
  return { host: u.hostname, port: u.port ? Number(u.port) : (defaults[u.protocol] ?? 0) };
}

/** Which port a compose service listens on: its PORT variable, or the well-known port of the infra image. */
function listenPort(name: string): number | undefined {
  const s = stack.find((x) => x.name === name);
  if (s) return Number(environment(name).PORT ?? s.port);
  return infra[name]?.port;
}

describe('docker-compose.yml', () => {
  it('defines the infrastructure on the agreed images, each with a health check', () => {
    for (const [name, spec] of Object.entries(infra)) {
      const s = services[name];
      expect(s, `service ${name}`).toBeDefined();
      expect(s?.image).toMatch(spec.image);
      expect(s?.healthcheck?.test, `${name} healthcheck`).toBeTruthy();
      expect(s?.healthcheck?.disable).not.toBe(true);
    }
  });

  describe.each(stack)('$name', (svc) => {
    const service = services[svc.name] as ComposeService;
    const env = () => effectiveEnvironment(svc.name);

    it('is built from the repository root with the one Dockerfile and SERVICE=<its name>', () => {
      expect(service, `compose service ${svc.name}`).toBeDefined();
      const { path, text, args } = dockerfileOf(service);
      expect(path).toBe(resolve(root, 'Dockerfile'));
      expect(text, `${path} exists`).not.toBe('');
      expect(args.SERVICE).toBe(svc.name);
      const builder = stages(text, args).find((s) => s.name === 'builder')!;
      const runs = builder.body.filter((i) => i.op === 'RUN').map((i) => i.args);
      expect(runs.join('\n')).toContain(`--filter ${svc.pkg}...`);
    });

    it('uses a multi-stage node:24 Dockerfile whose runtime stage runs as a non-root user', () => {
      const { text, args } = dockerfileOf(service);
      const all = stages(text, args);
      expect(all.length).toBeGreaterThanOrEqual(2);
      for (const stage of all) expect(lineage(all, stage).image).toMatch(/^node:24(\b|-)/);
      const runtime = runtimeOf(service);
      const users = runtime.body.filter((i) => i.op === 'USER').map((i) => i.args);
      expect(users.at(-1), 'last USER of the runtime stage').toBeDefined();
      expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
      expect(service.user ?? 'node').not.toMatch(/^(root|0)(:|$)/);
      const copies = runtime.body.filter((i) => i.op === 'COPY').map((i) => i.args);
      expect(copies.some((c) => c.includes('--from=builder'))).toBe(true);
      expect(runtime.body.some((i) => i.op === 'RUN' && /pnpm|npm (ci|install)/.test(i.args))).toBe(false);
      // The image listens where the service is agreed to (its stage's PORT) and exposes that port.
      expect(envOf(runtime.body).PORT).toBe(String(svc.port));
      expect(runtime.body.filter((i) => i.op === 'EXPOSE').map((i) => i.args)).toEqual([String(svc.port)]);
    });

    it('checks its health on /healthz and starts the compiled dist/main.js (no tsx at run time)', () => {
      const runtime = runtimeOf(service);
      const health = runtime.body.find((i) => i.op === 'HEALTHCHECK');
      expect(health?.args).toContain('/healthz');
      const cmd = runtime.body.find((i) => i.op === 'CMD');
      expect(JSON.parse(cmd?.args ?? '[]')).toEqual(['node', 'dist/main.js']);
      const { text, args } = dockerfileOf(service);
      const built = stages(text, args)
        .flatMap((s) => s.body)
        .map((i) => i.args)
        .join('\n');
      expect(built).toContain(`pnpm --filter ${svc.pkg} build`);
      expect(built).toMatch(new RegExp(`--filter ${svc.pkg} deploy --prod`));
      expect(text).not.toMatch(/--import tsx|tsx src/);
      const test = service.healthcheck?.test;
      if (test) expect(JSON.stringify(test)).toContain('/healthz');
    });

    it('sets every variable its config schema requires and the config parses in production mode', () => {
      const required = Object.entries(svc.schema.shape)
        .filter(([, field]) => !field.safeParse(undefined).success)
        .map(([key]) => key);
      for (const key of required) expect(env(), `${svc.name} needs ${key}`).toHaveProperty(key);
      expect(() => svc.load(resolvedEnvironment(svc.name))).not.toThrow();
      expect(env().NODE_ENV).toBe('production');
    });

    it('overrides every default that points at localhost (URLs, catalog path) and listens on its agreed port', () => {
      const keys = Object.keys(svc.schema.shape).filter((k) => /_URL$/.test(k) || k === 'CATALOG_PATH');
      for (const key of keys) {
        const field = svc.schema.shape[key]!;
        const parsed = field.safeParse(undefined);
        const defaultValue = parsed.success ? String(parsed.data ?? '') : '';
        if (/127\.0\.0\.1|localhost/.test(defaultValue) || key === 'CATALOG_PATH') {
          expect(env(), `${svc.name} must set ${key} (default ${defaultValue})`).toHaveProperty(key);
        }
      }
      for (const [key, value] of Object.entries(env())) {
        if (/_URL$/.test(key)) expect(value, `${svc.name} ${key}`).not.toMatch(/127\.0\.0\.1|localhost/);
      }
      expect(Number(env().PORT)).toBe(svc.port);
    });

    it('reaches other services by compose service name and their listening port', () => {
      for (const [key, value] of Object.entries(env())) {
        const target = urlHostPort(value);
        if (!target) continue;
        expect(Object.keys(services), `${svc.name} ${key}=${value}: unknown host`).toContain(target.host);
        expect(target.port, `${svc.name} ${key}=${value}: port`).toBe(listenPort(target.host));
      }
    });

    it('waits for every service it talks to to be healthy', () => {
      const dependsOn = service.depends_on ?? {};
      expect(Array.isArray(dependsOn), 'depends_on uses the long form with conditions').toBe(false);
      const targets = new Set(
        Object.values(env())
          .map(urlHostPort)
          .filter((t) => t !== null)
          .map((t) => t.host),
      );
      // Keys and billing call each other (usage figures; key owners): compose allows no cycle, so
      // billing does not wait for keys — its usage worker retries while keys is away (transient).
      if (svc.name === 'billing') targets.delete('keys');
      // The dashboard waits for keys; keys reads the dashboard's audit log only for GET /audit
      // (a 503 naming the dashboard while it is away), so keys does not wait for it.
      if (svc.name === 'keys') targets.delete('dashboard');
      for (const host of targets) {
        expect(dependsOn, `${svc.name} depends_on ${host}`).toHaveProperty(host);
        expect((dependsOn as Record<string, { condition?: string }>)[host]?.condition).toBe(
          'service_healthy',
        );
      }
      for (const dep of Object.keys(dependsOn)) {
        const s = services[dep];
        const hasHealth =
          Boolean(s?.healthcheck?.test) || (s?.build && /HEALTHCHECK/.test(dockerfileOf(s).text));
        expect(hasHealth, `${dep} has a health check`).toBe(true);
      }
    });
  });

  it('wires each service to the services it needs', () => {
    const wiring: Record<string, Record<string, string>> = {
      keys: { DATABASE_URL: 'postgres', REDIS_URL: 'redis', BILLING_URL: 'billing' },
      billing: { DATABASE_URL: 'postgres', REDIS_URL: 'redis', AMQP_URL: 'rabbitmq' },
      proxy: {
        REDIS_URL: 'redis',
        AMQP_URL: 'rabbitmq',
        KEYS_URL: 'keys',
        BILLING_URL: 'billing',
        PROVIDER_SIM_URL: 'provider-sim',
      },
    };
    for (const [name, vars] of Object.entries(wiring)) {
      for (const [key, host] of Object.entries(vars)) {
        expect(urlHostPort(effectiveEnvironment(name)[key] ?? '')?.host, `${name} ${key}`).toBe(host);
      }
    }
  });

  it('ships no key or secret, needs none from the shell, and binds internal services explicitly', () => {
    expect(composeText).not.toMatch(/change-me|SERVICE_JWT_SECRET|:\?/);
    for (const name of SERVICE_NAMES) expect(composeText).not.toContain(DEV_SERVICE_KEYS[name].privateKey);
    expect(environment('keys').HOST).toBe('0.0.0.0');
    expect(environment('billing').HOST).toBe('0.0.0.0');
    expect(services.keys?.ports ?? []).toEqual([]);
    expect(services.billing?.ports ?? []).toEqual([]);
  });

  it('mounts each private key into its own service only (admin: the CLI only), read-only', () => {
    const identity: Record<string, string | null> = {
      proxy: 'proxy-identity',
      keys: 'keys-identity',
      dashboard: 'dashboard-identity',
      billing: 'billing-identity',
      'provider-sim': null,
    };
    const identityVolumes = [
      'proxy-identity',
      'keys-identity',
      'billing-identity',
      'dashboard-identity',
      'admin-identity',
    ];
    for (const [name, own] of Object.entries(identity)) {
      const mounted = mountsOf(name).filter((m) => identityVolumes.includes(m.source));
      expect(
        mounted.map((m) => m.source),
        name,
      ).toEqual(own ? [own] : []);
      for (const m of mounted) expect(m.readOnly, `${name} ${m.source}`).toBe(true);
    }
    for (const [name] of Object.entries(services)) {
      // The admin CLI: run on demand (`admin`) or once by `up` for the demo account (`demo`, exits).
      if (name === 'service-keys' || name === 'admin' || name === 'demo') continue;
      expect(
        mountsOf(name).map((m) => m.source),
        name,
      ).not.toContain('admin-identity');
    }
    expect(mountsOf('admin').map((m) => m.source)).toContain('admin-identity');
    expect(services.admin).toMatchObject({ profiles: ['admin'] });
    expect(services.demo).toMatchObject({ entrypoint: ['node', 'dist/cli.js'], restart: 'no' });
    expect((services.demo as { command: string[] }).command.slice(0, 2)).toEqual(['demo', 'bootstrap']);
    for (const m of mountsOf('demo')) expect(m.readOnly, `demo ${m.source}`).toBe(true);
    for (const name of ['proxy', 'keys', 'billing', 'dashboard']) {
      expect(services[name]?.depends_on, name).toHaveProperty(
        'service-keys.condition',
        'service_completed_successfully',
      );
    }
  });

  it('generates keys that work: each caller signs, each callee verifies only its trusted callers, nothing from the dev set', async () => {
    const configs = {
      proxy: loadProxyConfig(resolvedEnvironment('proxy')),
      keys: loadKeysConfig(resolvedEnvironment('keys')),
      billing: loadBillingConfig(resolvedEnvironment('billing')),
      dashboard: loadDashboardConfig(resolvedEnvironment('dashboard')),
    };
    const adminEnv = resolvedEnvironment('admin');
    const admin = createServiceSigner(
      'admin',
      readFileSync(adminEnv.ADMIN_PRIVATE_KEY_FILE ?? '', 'utf8').trim(),
    );
    const signers = {
      proxy: createServiceSigner('proxy', configs.proxy.SERVICE_PRIVATE_KEY),
      keys: createServiceSigner('keys', configs.keys.SERVICE_PRIVATE_KEY),
      billing: createServiceSigner('billing', configs.billing.SERVICE_PRIVATE_KEY),
      dashboard: createServiceSigner('dashboard', configs.dashboard.SERVICE_PRIVATE_KEY),
      admin,
    };
    const trusted = {
      keys: ['proxy', 'dashboard', 'billing'],
      billing: ['proxy', 'keys', 'dashboard', 'admin'],
      dashboard: ['admin', 'keys'],
    };
    for (const [callee, callers] of Object.entries(trusted) as Array<
      ['keys' | 'billing' | 'dashboard', string[]]
    >) {
      const verifier = createServiceVerifier(callee, configs[callee].SERVICE_PUBLIC_KEYS);
      for (const [caller, signer] of Object.entries(signers)) {
        const claims = await verifier.verify(await signer.sign(callee));
        expect(claims?.caller ?? null, `${caller} → ${callee}`).toBe(
          callers.includes(caller) ? caller : null,
        );
      }
    }
  });

  it('shares one REDIS_PREFIX and one AMQP_PREFIX, from one variable each', () => {
    const users = ['keys', 'billing', 'proxy'];
    expect(new Set(users.map((n) => environment(n).REDIS_PREFIX)).size).toBe(1);
    expect(environment('billing').AMQP_PREFIX).toBe(environment('proxy').AMQP_PREFIX);
  });

  it('gives each service its own login on each server, generated on first start and created by the server (issue 23)', () => {
    generateComposeKeys();
    const seen = new Map<string, string>();
    for (const name of ['proxy', 'keys', 'billing', 'dashboard', 'admin']) {
      const env = effectiveEnvironment(name);
      for (const key of ['DATABASE_URL', 'REDIS_URL', 'AMQP_URL']) {
        if (!env[key]) continue;
        expect(environment(name)[key], `${name} ${key} is never written in the compose file`).toBeUndefined();
        const u = new URL(env[key]!);
        const password = decodeURIComponent(u.password);
        expect(password.length, `${name} ${key} password`).toBeGreaterThanOrEqual(24);
        // The admin CLI is the keys service's own tool: it uses keys' logins; no service shares one.
        const owner = name === 'admin' ? 'keys' : name;
        const prior = seen.get(password);
        expect(prior === undefined || prior === `${owner} ${key}`, `${name} ${key} shares ${prior}`).toBe(
          true,
        );
        seen.set(password, `${owner} ${key}`);
      }
    }
    const read = (volume: string, file: string) => readFileSync(join(volumeDirs.get(volume)!, file), 'utf8');
    // Postgres creates each role, owner of its schema only, from the init volume on its first start.
    expect(mountsOf('postgres')).toContainEqual({
      source: 'postgres-init',
      target: '/docker-entrypoint-initdb.d',
      readOnly: true,
    });
    const sql = read('postgres-init', '10-tollgate-roles.sql');
    for (const [service, schema] of [
      ['keys', 'keys'],
      ['billing', 'billing'],
      ['dashboard', 'dashboard'],
    ] as const) {
      const u = new URL(effectiveEnvironment(service).DATABASE_URL!);
      expect(sql).toContain(`create role ${u.username} login password '${decodeURIComponent(u.password)}';`);
      expect(sql).toContain(`create schema if not exists ${schema} authorization ${u.username};`);
    }
    // Redis: the ACL file names each user with its password; the default user may only PING.
    expect((services.redis as { command?: string[] } | undefined)?.command).toEqual(
      expect.arrayContaining(['--aclfile', '/etc/tollgate-redis/users.acl']),
    );
    const acl = read('redis-acl', 'users.acl');
    expect(acl).toMatch(/^user default on nopass resetkeys resetchannels -@all \+ping$/m);
    for (const service of ['proxy', 'keys', 'billing']) {
      const u = new URL(effectiveEnvironment(service).REDIS_URL!);
      expect(acl).toContain(`user ${u.username} on >${decodeURIComponent(u.password)} `);
    }
    expect(acl).toMatch(/user tollgate-proxy on >\S+ %R~tg:key:\* /);
    // RabbitMQ imports its users at boot; each password hash verifies against the service's URL.
    const defs = JSON.parse(read('rabbitmq-definitions', 'definitions.json')) as {
      users: Array<{ name: string; password_hash: string }>;
      permissions: Array<{ user: string; configure: string; write: string; read: string }>;
    };
    for (const service of ['proxy', 'billing']) {
      const u = new URL(effectiveEnvironment(service).AMQP_URL!);
      const user = defs.users.find((x) => x.name === u.username);
      const raw = Buffer.from(user?.password_hash ?? '', 'base64');
      const salt = raw.subarray(0, 4);
      const hash = createHash('sha256')
        .update(Buffer.concat([salt, Buffer.from(decodeURIComponent(u.password))]))
        .digest();
      expect(raw.subarray(4).equals(hash), `${service} RabbitMQ password hash`).toBe(true);
    }
    expect(defs.permissions.find((p) => p.user === 'tollgate-proxy')).toMatchObject({
      configure: '^tollgate\\.usage$',
      write: '^tollgate\\.usage$',
      read: '^$',
    });
    expect(environment('rabbitmq').RABBITMQ_DEFAULT_PASS).toBeUndefined();
    expect(read('rabbitmq-definitions', 'rabbitmq.conf')).toContain(
      'load_definitions = /etc/tollgate-rabbitmq/definitions.json',
    );
  });

  it('publishes the proxy on 8080 and no other Tollgate service', () => {
    const ports = (services.proxy?.ports ?? []).map((p) =>
      typeof p === 'string' ? interpolate(p) : `${p.published}:${p.target}`,
    );
    expect(ports).toContain('8080:8080');
    for (const name of ['keys', 'billing', 'provider-sim']) expect(services[name]?.ports ?? []).toEqual([]);
  });

  it('gives the proxy a mounted catalog whose provider is the provider-sim container', () => {
    const env = environment('proxy');
    const catalogPath = env.CATALOG_PATH ?? '';
    const mounts = (services.proxy?.volumes ?? []).map((v) =>
      typeof v === 'string' ? v.split(':') : [v.source, v.target, v.read_only ? 'ro' : 'rw'],
    );
    const mount = mounts.find(([, target]) => target && catalogPath.startsWith(`${target}/`));
    expect(mount, `a volume mounts ${catalogPath}`).toBeDefined();
    const hostFile = resolve(root, mount?.[0] ?? '', catalogPath.slice((mount?.[1] ?? '').length + 1));
    expect(existsSync(hostFile), hostFile).toBe(true);

    const catalog = loadCatalog(hostFile, env);
    const baseUrls = new Set(catalog.models().flatMap((m) => m.providers.map((p) => p.provider.baseUrl)));
    expect(baseUrls.size).toBeGreaterThan(0);
    for (const baseUrl of baseUrls) {
      const target = urlHostPort(baseUrl);
      expect(target?.host, baseUrl).toBe('provider-sim');
      expect(target?.port).toBe(listenPort('provider-sim'));
      expect(services.proxy?.depends_on).toHaveProperty('provider-sim');
    }
  });
});

describe('the Dockerfile', () => {
  it('is the only one: every image is built from it, and a build that names no service fails', () => {
    for (const name of readdirSync(resolve(root, 'services')))
      expect(existsSync(resolve(root, 'services', name, 'Dockerfile')), `services/${name}/Dockerfile`).toBe(
        false,
      );
    const text = readFileSync(resolve(root, 'Dockerfile'), 'utf8');
    for (const missing of [{}, { SERVICE: 'nope' }] as Record<string, string>[]) {
      const all = stages(text, missing);
      expect(lineage(all, all.at(-1)!).image).not.toMatch(/^node:/);
    }
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      const { path, args } = dockerfileOf(s);
      expect(path, name).toBe(resolve(root, 'Dockerfile'));
      expect(existsSync(resolve(root, 'services', args.SERVICE ?? '-', 'package.json')), name).toBe(true);
    }
  });
});

describe('.dockerignore', () => {
  const ignore = readFileSync(resolve(root, '.dockerignore'), 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('keeps node_modules, git history, tests and local env files out of the build context', () => {
    for (const entry of ['**/node_modules', '.git', '.env', 'tests', '**/*.test.ts'])
      expect(ignore).toContain(entry);
  });

  it('does not exclude anything the Dockerfile copies', () => {
    const copied = new Set<string>();
    for (const svc of stack) {
      const { text, args } = dockerfileOf(services[svc.name]!);
      for (const stage of stages(text, args)) {
        for (const ins of stage.body) {
          if (ins.op !== 'COPY' || ins.args.includes('--from=')) continue;
          const parts = ins.args.split(/\s+/).filter((p) => !p.startsWith('--'));
          for (const src of parts.slice(0, -1)) copied.add(src.replace(/^\.\//, ''));
        }
      }
    }
    for (const src of copied) {
      expect(existsSync(resolve(root, src)), `${src} exists`).toBe(true);
      expect(ignore, `${src} is copied by a Dockerfile`).not.toContain(src);
    }
  });
});
