import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CorkedRedis } from './corked-redis';
import { createRedisClient, isCluster, type RedisClient, whenReady } from './index';

// A single node (CorkedRedis is a node client): the run's REDIS_URL, also in the cluster project.
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `tgt:${process.env.TOLLGATE_TEST_RUN}:${randomBytes(4).toString('hex')}:`;
const clients: RedisClient[] = [];

async function connected(options: Parameters<typeof createRedisClient>[1]): Promise<RedisClient> {
  const client = createRedisClient({ url }, { enableOfflineQueue: false, ...options });
  clients.push(client);
  expect(await whenReady(client, 5_000)).toBe(true);
  return client;
}

/** Socket writes of `client` from now on: Node's stream calls `_write` or `_writev` once per system call. */
function countWrites(client: RedisClient): { writes: number; chunks: number } {
  const socket = (client as unknown as { stream: Record<string, (...a: unknown[]) => unknown> }).stream;
  const count = { writes: 0, chunks: 0 };
  const write = socket._write?.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (...a: unknown[]) => {
    count.writes++;
    count.chunks++;
    return write?.(...a);
  };
  socket._writev = (...a: unknown[]) => {
    count.writes++;
    count.chunks += (a[0] as unknown[]).length;
    return writev?.(...a);
  };
  return count;
}

afterEach(async () => {
  const c = clients.find((client) => client.status === 'ready');
  if (c) {
    const names = await c.keys(`${prefix}*`);
    if (names.length > 0) await c.del(...names);
  }
  for (const client of clients.splice(0)) client.disconnect();
});

describe('batchWrites (CorkedRedis)', () => {
  it('a node client built with batchWrites is a CorkedRedis; a cluster ignores it; never both batchings', () => {
    const node = createRedisClient({ url: 'redis://127.0.0.1:1' }, { lazyConnect: true, batchWrites: true });
    expect(node).toBeInstanceOf(CorkedRedis);
    expect(node.options.enableAutoPipelining).toBe(false);
    node.disconnect();
    const cluster = createRedisClient(
      { url: 'redis+cluster://127.0.0.1:1' },
      { lazyConnect: true, batchWrites: true },
    );
    expect(isCluster(cluster)).toBe(true);
    cluster.disconnect();
    expect(() =>
      createRedisClient({ url: 'redis://127.0.0.1:1' }, { batchWrites: true, enableAutoPipelining: true }),
    ).toThrow(/exclusive/);
  });

  it('sends the commands of one event-loop turn in one socket write, each with its own reply', async () => {
    const client = await connected({ batchWrites: true });
    const count = countWrites(client);
    const replies = await Promise.all([
      client.set(`${prefix}a`, '1', 'EX', 60),
      client.incrby(`${prefix}a`, 41),
      client.eval('return ARGV[1] .. KEYS[1]', 1, `${prefix}k`, 'v:'),
      client.get(`${prefix}a`),
      client.hget(`${prefix}missing`, 'f'),
    ]);
    expect(replies).toEqual(['OK', 42, `v:${prefix}k`, '42', null]);
    expect(count).toEqual({ writes: 1, chunks: 5 });
    // The next turn's commands are not held back by the last: a write of their own.
    expect(await client.get(`${prefix}a`)).toBe('42');
    expect(count.writes).toBe(2);
  });

  it('a client without it writes each command on its own (what batchWrites saves)', async () => {
    const client = await connected({});
    const count = countWrites(client);
    await Promise.all([client.get(`${prefix}a`), client.get(`${prefix}b`), client.get(`${prefix}c`)]);
    expect(count.writes).toBe(3);
  });

  it('keeps the order of commands across turns while replies are outstanding', async () => {
    const client = await connected({ batchWrites: true });
    const key = `${prefix}order`;
    const sent: Array<Promise<unknown>> = [];
    for (let turn = 0; turn < 20; turn++) {
      for (let i = 0; i < 5; i++) sent.push(client.rpush(key, `${turn}.${i}`));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(sent);
    const expected = Array.from({ length: 100 }, (_, n) => `${Math.floor(n / 5)}.${n % 5}`);
    expect(await client.lrange(key, 0, -1)).toEqual(expected);
    await client.expire(key, 60);
  });

  it('fails the commands of a turn whose connection is lost before they are sent (no hang)', async () => {
    const client = await connected({ batchWrites: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const pending = [client.get(`${prefix}a`), client.get(`${prefix}b`)];
    (client as unknown as { stream: { destroy(): void } }).stream.destroy();
    const settled = await Promise.allSettled(pending);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
  });

  it('times a command out only for time the process could have read its reply (a late loop is not a slow Redis)', async () => {
    const client = await connected({ batchWrites: true, commandTimeout: 100 });
    const pong = client.ping();
    const blockedUntil = performance.now() + 400; // a turn four timeouts long, as under a burst of streams
    while (performance.now() < blockedUntil);
    expect(await pong).toBe('PONG');
    // A plain client (ioredis's own timer) reports the healthy server down after the same late turn.
    const plain = await connected({ commandTimeout: 100 });
    const lost = plain.ping();
    const until = performance.now() + 400;
    while (performance.now() < until);
    await expect(lost).rejects.toThrow(/timed out/);
  });

  it('still times out a Redis that does not answer, within a few timeouts', async () => {
    const sockets: Socket[] = [];
    // Answers the connection's first command (ioredis's readiness check, INFO) and then nothing.
    const mute = createServer((s) => {
      sockets.push(s);
      s.once('data', () => s.write('$0\r\n\r\n'));
    });
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    const client = createRedisClient(
      { url: `redis://127.0.0.1:${(mute.address() as AddressInfo).port}` },
      { batchWrites: true, commandTimeout: 100, enableOfflineQueue: true, maxRetriesPerRequest: 0 },
    );
    clients.push(client);
    const started = performance.now();
    await expect(client.ping()).rejects.toThrow(/timed out/);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(95);
    expect(took).toBeLessThan(5_000);
    client.disconnect();
    for (const s of sockets) s.destroy();
    await new Promise((r) => mute.close(r));
  });
});
