/**
 * The production build: every service compiles (infra/build/build.ts, the same command as `pnpm build`,
 * `make build` and the Dockerfile) and starts from `dist/` with plain `node dist/main.js` — no tsx, only
 * the service's production dependencies resolvable — against the real servers (its own test database,
 * Redis prefix and AMQP prefix), answers GET /healthz 200 on a free port, logs JSON at `info` and writes
 * no line per request.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { usageTopology } from '@tollgate/events';
import {
  createTestAmqp,
  createTestDatabase,
  createTestRedis,
  freePort,
  type TestDatabase,
  type TestRedis,
} from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listServices } from '../infra/build/build';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const services = listServices();

interface Running {
  name: string;
  port: number;
  child: ChildProcess;
  lines: string[];
}

let db: TestDatabase;
let redis: TestRedis;
const amqp = createTestAmqp();
const running = new Map<string, Running>();

beforeAll(async () => {
  execFileSync(process.execPath, [resolve(root, 'infra/build/build.ts')], { cwd: root, stdio: 'pipe' });
  db = await createTestDatabase();
  redis = await createTestRedis();
  const ports = Object.fromEntries(await Promise.all(services.map(async (s) => [s, await freePort()])));
  const url = (name: string) => `http://127.0.0.1:${ports[name] ?? 1}`;
  // One environment for every service: each reads the variables its config schema knows.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    AMQP_URL: amqp.url,
    AMQP_PREFIX: amqp.prefix,
    KEYS_URL: url('keys'),
    BILLING_URL: url('billing'),
    PROVIDER_SIM_URL: url('provider-sim'),
    DASHBOARD_URL: url('dashboard'),
    CATALOG_PATH: resolve(root, 'infra/catalog/dev.yaml'),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    // A free port each: the fixed defaults could be taken by a stack running on this machine.
    METRICS_PORT: '0',
  };
  for (const name of services) {
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: resolve(root, 'services', name),
      env: { ...env, PORT: String(ports[name]) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.on('data', (chunk: Buffer) => {
        const parts = (rest + chunk.toString('utf8')).split('\n');
        rest = parts.pop() ?? '';
        lines.push(...parts.filter(Boolean));
      });
    }
    running.set(name, { name, port: ports[name] ?? 0, child, lines });
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(
    [...running.values()].map(
      ({ child }) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(timer);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  await redis?.cleanup();
  await db?.drop();
  const topology = usageTopology(amqp.prefix);
  await amqp.cleanup({
    queues: [topology.queue, topology.deadLetterQueue],
    exchanges: [topology.exchange, topology.deadLetterExchange],
  });
}, 60_000);

async function healthz(svc: Running, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = 0;
  while (Date.now() < deadline) {
    if (svc.child.exitCode !== null) {
      throw new Error(`${svc.name} exited with ${svc.child.exitCode}:\n${svc.lines.slice(-20).join('\n')}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${svc.port}/healthz`);
      last = res.status;
      if (res.ok) return res.status;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return last;
}

describe('production build', () => {
  it('runs the compiled migrations safely when several start at once (Kubernetes init containers)', async () => {
    const fresh = await createTestDatabase();
    try {
      const migrating = services.filter((s) => existsSync(resolve(root, 'services', s, 'dist/migrate.js')));
      expect(migrating.length).toBeGreaterThanOrEqual(2);
      const runs = migrating.flatMap((name) =>
        Array.from(
          { length: 3 },
          () =>
            new Promise<{ name: string; code: number | null; out: string }>((done) => {
              const child = spawn(process.execPath, ['dist/migrate.js'], {
                cwd: resolve(root, 'services', name),
                env: {
                  PATH: process.env.PATH,
                  DATABASE_URL: fresh.url,
                  LOG_LEVEL: 'info',
                  LOG_PRETTY: 'false',
                },
                stdio: ['ignore', 'pipe', 'pipe'],
              });
              let out = '';
              child.stdout?.on('data', (c: Buffer) => {
                out += c.toString();
              });
              child.stderr?.on('data', (c: Buffer) => {
                out += c.toString();
              });
              child.on('exit', (code) => done({ name, code, out }));
            }),
        ),
      );
      const results = await Promise.all(runs);
      for (const r of results) expect(r.code, `${r.name}: ${r.out}`).toBe(0);
      // Each migration applied exactly once per service: one run reports it, the others find nothing to do.
      for (const name of migrating) {
        // Every service's migrate command is the one runner (@tollgate/db): JSON log lines only.
        for (const r of results.filter((x) => x.name === name)) {
          const logged = r.out.split('\n').filter((l) => l.trim());
          expect(logged.length, `${name}: ${r.out}`).toBeGreaterThan(0);
          for (const line of logged)
            expect(JSON.parse(line), `${name}: ${line}`).toMatchObject({ name: `${name}-migrate` });
        }
        const applying = results.filter((r) => r.name === name && /"applied":\["/.test(r.out));
        expect(applying, name).toHaveLength(1);
      }
    } finally {
      await fresh.drop();
    }
  }, 120_000);

  it('finds every service, including any added later (each with src/main.ts)', () => {
    expect(services).toEqual(expect.arrayContaining(['billing', 'keys', 'provider-sim', 'proxy']));
    for (const name of services)
      expect(existsSync(resolve(root, 'services', name, 'dist/main.js'))).toBe(true);
  });

  describe.each(services)('%s', (name) => {
    it('keeps tsx and the bundler out of its production dependencies and its start script', () => {
      const manifest = JSON.parse(readFileSync(resolve(root, 'services', name, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
        scripts?: Record<string, string>;
      };
      expect(manifest.dependencies ?? {}).not.toHaveProperty('tsx');
      expect(manifest.dependencies ?? {}).not.toHaveProperty('esbuild');
      expect(manifest.scripts?.start).toBe('node dist/main.js');
      const bundle = readFileSync(resolve(root, 'services', name, 'dist/main.js'), 'utf8');
      expect(bundle).not.toMatch(/from ["']@tollgate\//); // workspace packages are compiled in
      expect(bundle).not.toMatch(/from ["']tsx/);
    });

    it('starts with node dist/main.js, answers /healthz 200, logs JSON at info and no line per request', async () => {
      const svc = running.get(name)!;
      expect(await healthz(svc)).toBe(200);
      // Let start-up logging settle, then count lines around a few requests.
      await new Promise((r) => setTimeout(r, 300));
      const before = svc.lines.length;
      for (let i = 0; i < 5; i++)
        expect((await fetch(`http://127.0.0.1:${svc.port}/healthz`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      // The access log line of the request context is at debug: nothing per request at info.
      expect(svc.lines.slice(before)).toEqual([]);
      expect(svc.lines.length).toBeGreaterThan(0);
      for (const line of svc.lines) {
        const entry = JSON.parse(line) as { level?: number };
        expect(entry.level, line).toBeGreaterThanOrEqual(30);
      }
    }, 90_000);
  });
});
