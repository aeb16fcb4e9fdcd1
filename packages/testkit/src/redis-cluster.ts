import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A real local Redis Cluster owned by one test run (or one test file): three masters with one replica
 * each (`redis-server --cluster-enabled yes` ×6 on free ports picked now, `redis-cli --cluster create
 * … --cluster-replicas 1`), each node in its own directory under a temp directory, without
 * persistence. Nothing is shared with the 127.0.0.1:6379 server or with another run's cluster: ports
 * and directories are this run's own.
 */
export interface LocalRedisCluster {
  /** `redis+cluster://127.0.0.1:<first master>` (what REDIS_URL is set to for the code under test). */
  url: string;
  /** Every node's `host:port` (the REDIS_CLUSTER_NODES form). */
  nodes: string[];
  /** The ports of the current masters (after a failover, the promoted replica is one). */
  masters(): Promise<number[]>;
  /**
   * Manual failover of the master on `port` (CLUSTER FAILOVER on its replica: the replica catches up
   * with the master first, so no acknowledged write is lost); resolves when the replica is master and
   * every node agrees. Returns the new master's port.
   */
  failover(masterPort: number): Promise<number>;
  /**
   * What each failover saw, for failure reports: the master's and the replica's replication state
   * (role, offsets, link) and key count (equal offsets with different counts: the replica holds
   * another data set) just before CLUSTER FAILOVER and the promoted node's after it.
   */
  failovers: string[];
  /** The last `lines` lines of the log of the node on `port` (for failure reports). */
  logTail(port: number, lines?: number): string;
  /** The port of the master serving hash slot `slot`, as the node on `askPort` (default the first) maps it. */
  ownerOf(slot: number, askPort?: number): Promise<number>;
  /**
   * Moves hash slot `slot` to the master on `toPort` if the slot holds no key (CLUSTER SETSLOT
   * IMPORTING / MIGRATING / NODE, what a reshard does for a slot without keys); resolves true when
   * every node maps the slot there, false (nothing changed) when the slot holds keys. A client that
   * read the slot map before is left with a stale one.
   */
  moveSlot(slot: number, toPort: number): Promise<boolean>;
  /** SIGKILL of every node and removal of the directory. */
  stop(): Promise<void>;
}

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const cli = (port: number, ...args: string[]) =>
  run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 }).then((r) =>
    r.stdout.trim(),
  );

/** A command to the node on `port` through a short-lived connection. */
export async function ask(port: number, ...args: string[]): Promise<unknown> {
  const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await node.connect();
    return await node.call(args[0] as string, ...args.slice(1));
  } finally {
    node.disconnect();
  }
}

/** The port of the master serving `slot` in the slot map of the node on `askPort`. */
async function ownerOf(slot: number, askPort: number): Promise<number> {
  const ranges = (await ask(askPort, 'CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
  const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
  if (owner === undefined) throw new Error(`redis cluster: slot ${slot} not served`);
  return owner;
}

/** LocalRedisCluster.moveSlot of the cluster of nodes on `ports`. */
async function moveSlot(ports: number[], slot: number, toPort: number): Promise<boolean> {
  const fromPort = await ownerOf(slot, ports[0] as number);
  if (fromPort === toPort) return true;
  if (Number(await ask(fromPort, 'CLUSTER', 'COUNTKEYSINSLOT', String(slot))) > 0) return false;
  const [fromId, toId] = await Promise.all(
    [fromPort, toPort].map(async (p) => String(await ask(p, 'CLUSTER', 'MYID'))),
  );
  const s = String(slot);
  await ask(toPort, 'CLUSTER', 'SETSLOT', s, 'IMPORTING', fromId as string);
  await ask(fromPort, 'CLUSTER', 'SETSLOT', s, 'MIGRATING', toId as string);
  // No key to MIGRATE: assign the slot, on the target first (it takes a new config epoch).
  await ask(toPort, 'CLUSTER', 'SETSLOT', s, 'NODE', toId as string);
  await ask(fromPort, 'CLUSTER', 'SETSLOT', s, 'NODE', toId as string);
  await waitFor(`slot ${slot} on ${toPort} everywhere`, async () => {
    for (const port of ports) if ((await ownerOf(slot, port)) !== toPort) return false;
    return true;
  });
  return true;
}

/**
 * Waits until every replica has finished its first full sync and streams from its master, as in a
 * deployment whose replicas are established (docs/operations.md "Redis Cluster failover").
 */
async function replicasEstablished(ports: number[]): Promise<void> {
  for (const port of ports)
    await waitFor(`node ${port} replication established`, async () => {
      const info = await cli(port, 'INFO', 'replication');
      if (info.includes('role:master'))
        return /connected_slaves:1\b/.test(info) && /slave0:.*state=online/.test(info);
      return info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0');
    });
}

/** The last `lines` lines of a node's log file (or why it cannot be read). */
function readLogTail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `no log (${(err as Error).message})`;
  }
}

const roleOf = async (port: number) => (await cli(port, 'ROLE')).split('\n')[0]?.trim();

/**
 * CLUSTER FAILOVER on `replicaPort` until it is a master. A manual failover Redis gives up on (after
 * 5 s, on a starved host) changes nothing, so it is asked again, three times in all; the error names
 * the last answer and ends with both nodes' logs.
 */
async function promote(replicaPort: number, masterPort: number, logTail: (port: number) => string) {
  let answer = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    answer = (await cli(replicaPort, 'CLUSTER', 'FAILOVER').catch((err: Error) => err.message)).trim();
    try {
      await waitFor(
        `replica ${replicaPort} promoted`,
        async () => (await roleOf(replicaPort)) === 'master',
        10_000,
      );
      return;
    } catch {
      // not promoted: ask again
    }
  }
  throw new Error(
    `redis cluster: replica ${replicaPort} not promoted after 3 CLUSTER FAILOVER (last answer: ${answer})\n` +
      `log of :${masterPort}:\n${logTail(masterPort)}\nlog of :${replicaPort}:\n${logTail(replicaPort)}`,
  );
}

/**
 * One cluster node on `port` (bus on `busPort`), its config file and log in `dir`, its working
 * directory `<dir>/<port>`: each node its own. A replica's full sync renames the RDB it received to
 * `<dir>/dump.rdb` and then loads that file, so replicas sharing a directory and syncing at the same
 * moment (the three do when the cluster is created) could load another shard's RDB: keys of other
 * slots, none of its master's, at its master's offset. Promoted by CLUSTER FAILOVER, such a replica
 * lacked whole spend hashes (cluster-failover.test.ts, 4 runs in 20 under CPU load, when the first
 * sync still ran under the test's writes).
 */
function spawnNode(dir: string, port: number, busPort: number, nodeTimeoutMs: number): ChildProcess {
  const nodeDir = join(dir, String(port));
  mkdirSync(nodeDir);
  return spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--cluster-port',
      String(busPort),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      '--dir',
      nodeDir,
      '--save',
      '',
      '--appendonly',
      'no',
      // A replica's first sync starts at once (the default waits 5 s for more replicas), while
      // the cluster is still empty.
      '--repl-diskless-sync-delay',
      '0',
      '--logfile',
      join(dir, `${port}.log`),
    ],
    { stdio: 'ignore' },
  );
}

/** Starts the cluster and waits until every slot is served (cluster_state:ok on every node). */
export async function startLocalRedisCluster(
  options: { nodeTimeoutMs?: number } = {},
): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-cluster-'));
  // Six client ports and six bus ports (cluster-port), all picked free now.
  const ports = await freePorts(12);
  const clientPorts = ports.slice(0, 6);
  const children: ChildProcess[] = [];
  const killAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  process.once('exit', killAll);
  try {
    clientPorts.forEach((port, i) => {
      children.push(spawnNode(dir, port, ports[6 + i] as number, options.nodeTimeoutMs ?? 2_000));
    });
    for (const port of clientPorts)
      await waitFor(`node ${port} up`, async () => (await cli(port, 'PING')) === 'PONG');
    await cli(
      clientPorts[0] as number,
      '--cluster',
      'create',
      ...clientPorts.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    );
    for (const port of clientPorts)
      await waitFor(`node ${port} cluster_state:ok`, async () =>
        (await cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
      );
    await replicasEstablished(clientPorts);
  } catch (err) {
    killAll();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const failovers: string[] = [];
  /** A node's replication state in one line: role, offsets, its master's link, its replicas, DBSIZE. */
  const replication = async (port: number) =>
    (await cli(port, 'INFO', 'replication').catch((err: Error) => err.message))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) =>
        /^(role|master_link_status|master_repl_offset|slave_repl_offset|slave\d|master_sync_in_progress)/.test(
          l,
        ),
      )
      .join(' ')
      .concat(` dbsize:${await cli(port, 'DBSIZE').catch((err: Error) => err.message)}`);
  const masters = async () => {
    const out: number[] = [];
    for (const port of clientPorts) if ((await roleOf(port).catch(() => '')) === 'master') out.push(port);
    return out;
  };

  const logTail = (port: number, lines = 40) => readLogTail(join(dir, `${port}.log`), lines);
  return {
    url: `redis+cluster://127.0.0.1:${clientPorts[0]}`,
    nodes: clientPorts.map((p) => `127.0.0.1:${p}`),
    masters,
    async failover(masterPort) {
      const m = new Redis(masterPort, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
      let replicaPort: number;
      try {
        await m.connect();
        const myId = String(await m.call('CLUSTER', 'MYID'));
        // A replica attaches asynchronously after the cluster is created: wait until the master sees one.
        let addr: string | undefined;
        await waitFor(`a replica of master ${masterPort}`, async () => {
          const replicas = (await m.call('CLUSTER', 'REPLICAS', myId)) as string[];
          addr = replicas[0]?.split(' ')[1];
          return addr !== undefined;
        });
        replicaPort = Number(addr!.split('@')[0]?.split(':')[1]);
      } finally {
        m.disconnect();
      }
      // Promote only a replica that has synchronised with its master (link up), so no write is lost.
      await waitFor(`replica ${replicaPort} in sync`, async () =>
        (await cli(replicaPort, 'INFO', 'replication')).includes('master_link_status:up'),
      );
      const before = await Promise.all([masterPort, replicaPort].map(replication));
      await promote(replicaPort, masterPort, logTail);
      failovers.push(
        `master :${masterPort} [${before[0]}] replica :${replicaPort} [${before[1]}] promoted [${await replication(replicaPort)}]`,
      );
      await waitFor('every node agrees', async () => {
        for (const port of clientPorts) {
          const nodes = await cli(port, 'CLUSTER', 'NODES');
          const line = nodes.split('\n').find((l) => l.includes(`:${replicaPort}@`));
          if (!line?.includes('master')) return false;
          if (!(await cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        }
        return true;
      });
      return replicaPort;
    },
    failovers,
    logTail,
    ownerOf: (slot, askPort = clientPorts[0] as number) => ownerOf(slot, askPort),
    moveSlot: (slot, toPort) => moveSlot(clientPorts, slot, toPort),
    async stop() {
      process.off('exit', killAll);
      const exits = children
        .filter((c) => c.exitCode === null && c.signalCode === null)
        .map((c) => new Promise((r) => c.once('exit', r)));
      killAll();
      await Promise.all(exits);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
