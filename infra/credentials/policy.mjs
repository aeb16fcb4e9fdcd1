// One credential per service, for every server (issue 23): what each service's own login may do.
// Plain JavaScript (node only), so the same table drives the dev/test provisioning
// (infra/credentials/provision.ts), docker compose's first start (infra/keys/service-keys.mjs) and
// the documentation (docs/operations.md "Security").

/** Postgres: a login role per service, owner of its own schema only (no grant on any other). */
export const POSTGRES_SERVICES = ['keys', 'billing', 'dashboard'];

/** Redis: an ACL user per service that talks to Redis. */
export const REDIS_SERVICES = ['proxy', 'keys', 'billing'];

/** RabbitMQ: a user per service that talks to the broker. */
export const RABBITMQ_SERVICES = ['proxy', 'billing'];

const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The commands of a Redis Cluster client (ioredis `Cluster`) beyond its data: `CLUSTER SLOTS` (the
 * slot map, read at connect and after every MOVED), `CLUSTER SHARDS` (its Redis 7 successor, for a
 * client that reads that instead) and `CLUSTER INFO` (the ready check). Every other CLUSTER
 * subcommand is refused: `GETKEYSINSLOT` would list key names outside the user's patterns, and the
 * topology-changing ones (FAILOVER, MEET, SETSLOT, …) are the operator's. Redis 6 files the whole
 * CLUSTER command under @dangerous, so without these three a service user cannot use a cluster at all.
 * Harmless on a single node (the commands answer an error there; nothing calls them).
 */
export const REDIS_CLUSTER_COMMANDS = ['-cluster', '+cluster|slots', '+cluster|shards', '+cluster|info'];

/**
 * Redis ACL rules per service (`ACL SETUSER <name> <rules…>`), under the deployment's REDIS_PREFIX.
 * `%R~` is read-only: the proxy reads key-cache records but cannot write one (it would mint a
 * working key); keys reads the committed spend of a key but cannot change it. Commands: everything
 * but the dangerous ones (FLUSHALL, KEYS, CONFIG, ACL, DEBUG, …), plus INFO for the client's ready
 * check and the three cluster discovery commands above; no Pub/Sub channel.
 */
export function redisAclRules(prefix) {
  const k = (pattern) => `${prefix}${pattern}`;
  const commands = ['+@all', '-@dangerous', '+info', ...REDIS_CLUSTER_COMMANDS, 'resetchannels'];
  return {
    proxy: [
      `%R~${k('key:*')}`,
      `~${k('rl:*')}`,
      `~${k('key-last-used:*')}`,
      `~${k('spend:*')}`,
      ...commands,
      // Its scripts name a key-cache record next to the rate window and spend hashes (the read and
      // count in one call, the checked admission), and Redis checks a script's declared keys as
      // written to. This selector lets EVAL/EVALSHA name them; every command inside the script is
      // still checked against the rules above, so a script cannot write a record either.
      `(~${k('key:*')} ~${k('rl:*')} ~${k('spend:*')} +eval +evalsha)`,
    ],
    // key-last-used: the 16 bucket hashes, and the single hash of older releases it drains.
    keys: [
      `~${k('key:*')}`,
      `~${k('key-last-used')}`,
      `~${k('key-last-used:*')}`,
      `%R~${k('spend:key:*')}`,
      ...commands,
    ],
    billing: [`~${k('spend:*')}`, ...commands],
  };
}

/**
 * RabbitMQ permissions per service on the vhost (`rabbitmqctl set_permissions <user> <configure>
 * <write> <read>`), for the exchanges and queues of AMQP_PREFIX (@tollgate/events usageTopology).
 * The proxy may declare and write to the usage exchange, nothing else: it cannot consume, purge,
 * delete or bind billing's queue. Billing declares and consumes its queues, dead-letters refused
 * messages to the dead-letter exchange and replays them to the usage exchange. Its queues are the
 * usage queue, the partition queues `billing.usage.p<i>` (USAGE_PARTITIONS > 1) and the dead-letter
 * queue.
 */
export function rabbitmqPermissions(prefix) {
  const p = escapeRegex(prefix);
  const usage = `^${p}\\.usage$`;
  const billingNames = `^${p}\\.(usage|usage\\.dlx|billing\\.usage|billing\\.usage\\.p[0-9]+|billing\\.usage\\.dead)$`;
  return {
    proxy: { configure: usage, write: usage, read: '^$' },
    billing: { configure: billingNames, write: billingNames, read: billingNames },
  };
}
