/**
 * `make dev` anywhere (infra/dev/ensure-servers.sh, stop-servers.sh) with a fake PATH: no local
 * PostgreSQL/Redis/RabbitMQ binaries, a stub `docker` that records its arguments, and the health checks
 * pointed at unused ports through env — the real shared servers are never touched.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@tollgate/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = ['dirname', 'mkdir', 'sleep', 'cat', 'rm', 'head', 'ls'];

let dir: string;
let servers: Server[] = [];

async function listen(port: number): Promise<void> {
  const s = createServer((c) => c.destroy());
  await new Promise<void>((r) => s.listen(port, '127.0.0.1', () => r()));
  servers.push(s);
}

/** A PATH with only basic tools, and optionally a `docker` stub that logs each call's arguments. */
function fakePath(withDocker: boolean, dockerScript = 'exit 0'): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const tool of TOOLS) {
    const real = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (real) symlinkSync(real, join(bin, tool));
  }
  if (withDocker) {
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/bash\nprintf '%s\\n' "$*" >> "${join(dir, 'docker.log')}"\n${dockerScript}\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
  }
  return bin;
}

async function run(
  script: string,
  path: string,
  ports: { pg: number; redis: number; amqp: number },
  wait = '0',
) {
  return spawnSync('/bin/bash', [resolve(root, 'infra/dev', script)], {
    encoding: 'utf8',
    env: {
      PATH: path,
      TOLLGATE_PG_PORT: String(ports.pg),
      TOLLGATE_REDIS_PORT: String(ports.redis),
      TOLLGATE_AMQP_PORT: String(ports.amqp),
      TOLLGATE_DEV_STATE: join(dir, 'state/docker-servers'),
      TOLLGATE_SERVER_WAIT: wait,
    },
  });
}

const dockerCalls = () =>
  existsSync(join(dir, 'docker.log')) ? readFileSync(join(dir, 'docker.log'), 'utf8').trim().split('\n') : [];

let ports: { pg: number; redis: number; amqp: number };

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-dev-servers-'));
  ports = { pg: await freePort(), redis: await freePort(), amqp: await freePort() };
});

afterEach(async () => {
  const pidFile = join(dir, 'redis.pid');
  if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  servers = [];
  rmSync(dir, { recursive: true, force: true });
});

describe('make dev without local servers', () => {
  it('with Docker: starts only the missing servers from docker-compose.yml, waits, records them', async () => {
    await listen(ports.redis); // Redis answers already: it is left alone
    const result = await run('ensure-servers.sh', fakePath(true), ports);
    const calls = dockerCalls();
    expect(calls[0]).toBe('compose version');
    const up = calls.find((c) => c.includes(' up '));
    expect(up).toBe(
      `compose -p tollgate-dev -f ${root}/docker-compose.yml -f ${root}/infra/dev/compose.dev-servers.yml up -d --wait postgres rabbitmq`,
    );
    expect(result.stdout).toContain('starting postgres rabbitmq with Docker');
    // Nothing answers on the stubbed ports, so the wait reports them (no real server was touched).
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`PostgreSQL is not answering on 127.0.0.1:${ports.pg}`);
    expect(readFileSync(join(dir, 'state/docker-servers'), 'utf8').trim().split('\n')).toEqual([
      'postgres',
      'rabbitmq',
    ]);
  });

  it('with Docker and servers that come up: exits 0; Ctrl-C (stop-servers.sh) stops only what it started', async () => {
    await listen(ports.pg);
    await listen(ports.amqp);
    // Redis is missing: the stub plays the container, a listener on the Redis port started by `up`.
    const listener = `require('net').createServer((c) => c.destroy()).listen(${ports.redis}, '127.0.0.1')`;
    const path = fakePath(
      true,
      `case "$*" in *" up "*) "${process.execPath}" -e "${listener}" >/dev/null 2>&1 & echo $! > "${join(dir, 'redis.pid')}";; esac`,
    );
    const result = await run('ensure-servers.sh', path, ports, '1');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(dockerCalls().some((c) => c.endsWith('up -d --wait redis'))).toBe(true);
    expect(readFileSync(join(dir, 'state/docker-servers'), 'utf8').trim()).toBe('redis');

    const stop = await run('stop-servers.sh', path, ports);
    expect(stop.status).toBe(0);
    expect(dockerCalls().at(-1)).toBe(
      `compose -p tollgate-dev -f ${root}/docker-compose.yml -f ${root}/infra/dev/compose.dev-servers.yml stop redis`,
    );
    expect(existsSync(join(dir, 'state/docker-servers'))).toBe(false);
    // A second Ctrl-C (or servers it did not start): Docker is not called.
    const before = dockerCalls().length;
    expect((await run('stop-servers.sh', path, ports)).status).toBe(0);
    expect(dockerCalls().length).toBe(before);
  });

  it('with every server answering: calls nothing and records nothing', async () => {
    for (const p of Object.values(ports)) await listen(p);
    const result = await run('ensure-servers.sh', fakePath(true), ports);
    expect(result.status).toBe(0);
    expect(dockerCalls()).toEqual([]);
    expect(existsSync(join(dir, 'state/docker-servers'))).toBe(false);
  });

  it('with neither servers nor Docker: one screen of what to install per platform', async () => {
    const result = await run('ensure-servers.sh', fakePath(false), ports);
    expect(result.status).toBe(1);
    const text = result.stderr;
    expect(text).toContain('not answering: postgres redis rabbitmq');
    expect(text).toMatch(/apt-get install postgresql redis-server rabbitmq-server/);
    expect(text).toMatch(/brew install postgresql@16 redis rabbitmq/);
    expect(text).toMatch(/Docker/);
    expect(text.trim().split('\n').length).toBeLessThanOrEqual(24);
  });

  it('with a docker CLI but no compose plugin: the install screen too', async () => {
    const result = await run(
      'ensure-servers.sh',
      fakePath(true, '[ "$1" = compose ] && exit 1; exit 0'),
      ports,
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/brew install/);
  });
});

describe('infra/dev/compose.dev-servers.yml', () => {
  it('adds ports on 127.0.0.1 and dev credentials to exactly the three servers of docker-compose.yml', () => {
    const base = parse(readFileSync(resolve(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, unknown>;
    };
    const dev = parse(readFileSync(resolve(root, 'infra/dev/compose.dev-servers.yml'), 'utf8')) as {
      services: Record<string, { ports?: string[]; environment?: Record<string, string> }>;
    };
    expect(Object.keys(dev.services).sort()).toEqual(['postgres', 'rabbitmq', 'redis']);
    for (const [name, s] of Object.entries(dev.services)) {
      expect(base.services, name).toHaveProperty(name);
      for (const p of s.ports ?? []) expect(p).toMatch(/^127\.0\.0\.1:\$\{TOLLGATE_[A-Z]+_PORT:-\d+\}:\d+$/);
    }
    // The defaults of `make dev` and the test kit: trusted postgres user, RabbitMQ guest/guest.
    expect(dev.services.postgres?.environment).toMatchObject({
      POSTGRES_USER: 'postgres',
      POSTGRES_HOST_AUTH_METHOD: 'trust',
    });
    expect(dev.services.rabbitmq?.environment).toMatchObject({
      RABBITMQ_DEFAULT_USER: 'guest',
      RABBITMQ_DEFAULT_PASS: 'guest',
    });
  });
});
