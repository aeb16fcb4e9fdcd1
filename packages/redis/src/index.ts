import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { CorkedRedis } from './corked-redis';

/**
 * The one Redis client factory of every service (proxy, keys, billing): a single node or a Redis
 * Cluster, chosen by configuration (docs/configuration.md "Redis"):
 *
 * - `REDIS_URL=redis://user:pass@host:6379` (or `rediss://`): one node.
 * - `REDIS_URL=redis+cluster://user:pass@host:7000` (or `rediss+cluster://`): a cluster, this node a
 *   seed (the client learns the others from it); `REDIS_CLUSTER_NODES=host:port,host:port` adds seeds.
 *   A plain `redis://` URL with `REDIS_CLUSTER_NODES` set is a cluster too (its login is used).
 *
 * Every key Tollgate's scripts touch together carries its account's hash tag (docs/architecture.md
 * "Redis keys and hash slots"), so a script never spans two slots; callers that batch several
 * accounts into one call group them with `sameSlot` first.
 */
export type RedisClient = Redis | Cluster;

/** The settings a service's Redis client is built from (its config's REDIS_URL, REDIS_CLUSTER_NODES). */
export interface RedisConnection {
  url: string;
  /** `host:port` seeds, comma-separated (empty or absent: the URL alone decides). */
  clusterNodes?: string | undefined;
}

/** The connection behaviour a service wants, the same for a node and a cluster. */
export interface RedisClientOptions {
  lazyConnect?: boolean;
  enableOfflineQueue?: boolean;
  /**
   * Batch the commands of one event-loop tick into one write (ioredis auto-pipelining). A single node
   * only: a cluster client never auto-pipelines (see createRedisClient).
   */
  enableAutoPipelining?: boolean;
  /**
   * Batch the commands of one event-loop turn into one write by corking the socket until the next
   * immediate (CorkedRedis, corked-redis.ts): the batching of auto-pipelining at a fraction of its
   * JavaScript. A single node only, and instead of `enableAutoPipelining` (never both).
   */
  batchWrites?: boolean;
  maxRetriesPerRequest?: number | null;
  commandTimeout?: number;
  /**
   * The command timeout of a cluster client (default `commandTimeout`): long enough for a planned
   * failover, during which the master being failed over holds writes until its replica has taken
   * over (docs/operations.md "Redis Cluster failover").
   */
  clusterCommandTimeout?: number;
  connectTimeout?: number;
  /** Delay before reconnect attempt `times` (ms); for a cluster, before re-reading its topology. */
  retryStrategy?: (times: number) => number | null;
}

interface Seed {
  host: string;
  port: number;
}

/** Whether `connection` names a cluster, and its seeds and login. Throws on a malformed setting. */
export function parseRedisConnection(connection: RedisConnection): {
  cluster: boolean;
  seeds: Seed[];
  username?: string;
  password?: string;
  tls: boolean;
  url: string;
} {
  const url = new URL(connection.url);
  const scheme = url.protocol.replace(/:$/, '');
  if (!['redis', 'rediss', 'redis+cluster', 'rediss+cluster'].includes(scheme))
    throw new Error(`REDIS_URL: unknown scheme ${scheme}: (redis, rediss, redis+cluster, rediss+cluster)`);
  const extra = (connection.clusterNodes ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parseSeed);
  const tls = scheme.startsWith('rediss');
  const cluster = scheme.endsWith('+cluster') || extra.length > 0;
  const seeds = url.hostname ? [{ host: url.hostname, port: Number(url.port || 6379) }, ...extra] : extra;
  if (cluster && seeds.length === 0) throw new Error('REDIS_CLUSTER_NODES: no seed node');
  const single = new URL(connection.url);
  if (cluster) single.protocol = tls ? 'rediss:' : 'redis:';
  return {
    cluster,
    seeds,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    tls,
    url: single.toString(),
  };
}

function parseSeed(text: string): Seed {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text);
  if (!m) throw new Error(`REDIS_CLUSTER_NODES: "${text}" is not host:port`);
  return { host: m[1] as string, port: Number(m[2]) };
}

/** A client for `connection`: an ioredis `Redis` for a node, an ioredis `Cluster` for a cluster. */
export function createRedisClient(
  connection: RedisConnection,
  options: RedisClientOptions = {},
): RedisClient {
  const c = parseRedisConnection(connection);
  const {
    retryStrategy,
    enableOfflineQueue,
    enableAutoPipelining,
    batchWrites,
    lazyConnect,
    clusterCommandTimeout,
    ...perNode
  } = options;
  if (!c.cluster) {
    if (batchWrites && enableAutoPipelining)
      throw new Error('createRedisClient: batchWrites and enableAutoPipelining are exclusive');
    const o: RedisOptions = { ...perNode };
    if (retryStrategy) o.retryStrategy = retryStrategy;
    if (enableOfflineQueue !== undefined) o.enableOfflineQueue = enableOfflineQueue;
    if (enableAutoPipelining !== undefined) o.enableAutoPipelining = enableAutoPipelining;
    if (lazyConnect !== undefined) o.lazyConnect = lazyConnect;
    return batchWrites ? new CorkedRedis(c.url, o) : new Redis(c.url, o);
  }
  if (clusterCommandTimeout !== undefined) perNode.commandTimeout = clusterCommandTimeout;
  const o: ClusterOptions = {
    redisOptions: {
      ...perNode,
      ...(c.username ? { username: c.username } : {}),
      ...(c.password ? { password: c.password } : {}),
      ...(c.tls ? { tls: {} } : {}),
    },
    // A failover moves a master's slots to its replica: retry on MOVED/CLUSTERDOWN/TRYAGAIN rather
    // than fail the command, for up to a few seconds (the cluster's node timeout decides how long).
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 32,
    slotsRefreshTimeout: 2_000,
    // Never auto-pipelined, whatever the caller asks: ioredis batches a node's commands of *different*
    // slots into one pipeline and follows a MOVED/ASK reply only when every failed command of the
    // batch got the very same error and no write in it succeeded; otherwise it hands the MOVED reply
    // to the caller and keeps routing to the old node (redis/ioredis#2075). After a failover that
    // refused requests (a spend admission failing with "MOVED 5159 …" is a 503, fault suite 8).
    // Sent one by one, every command follows its own redirection.
    enableAutoPipelining: false,
  };
  if (retryStrategy) o.clusterRetryStrategy = retryStrategy;
  if (enableOfflineQueue !== undefined) o.enableOfflineQueue = enableOfflineQueue;
  if (lazyConnect !== undefined) o.lazyConnect = lazyConnect;
  return new Cluster(c.seeds, o);
}

/** True for a cluster client (scripts must then carry keys of one slot only). */
export const isCluster = (redis: RedisClient): redis is Cluster =>
  (redis as { isCluster?: boolean }).isCluster === true;

/**
 * The hash tag of a key name as Redis Cluster reads it: the text between the first `{` and the next
 * `}` when that is not empty, else the whole name. Keys with the same tag live in the same slot.
 */
export function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The slot (0–16383) of a key name: CRC16 (XMODEM) of its hash tag, as Redis Cluster computes it. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(hashTag(key), 'utf8');
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Waits until the client is ready (bounded); resolves false when it was not ready in time. */
export function whenReady(redis: RedisClient, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', ready);
      resolve(false);
    }, timeoutMs);
    const ready = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', ready);
  });
}
export { CorkedRedis } from './corked-redis';
export { loadLua, luaDir } from './lua';
