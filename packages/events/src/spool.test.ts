import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTcpProxy, createTestAmqp, hostPortOf, type TcpProxy, type TestAmqp } from '@tollgate/testkit';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createUsagePublisher, type UsagePublisher } from './publisher';
import { drainEvents, recordingLogger, sampleEvent } from './test-support';
import { topologyNames, type UsageTopology, usageTopology } from './topology';

let amqp: TestAmqp;
let topology: UsageTopology;
let proxy: TcpProxy;
let dir: string;
const publishers: UsagePublisher[] = [];

beforeEach(async () => {
  amqp = createTestAmqp();
  topology = usageTopology(amqp.prefix);
  proxy = await createTcpProxy(hostPortOf(amqp.url));
  dir = mkdtempSync(join(tmpdir(), 'tollgate-spool-test-'));
});

afterEach(async () => {
  for (const p of publishers.splice(0)) await p.close({ drainTimeoutMs: 0 });
  await proxy.close();
  await amqp.cleanup(topologyNames(topology));
  rmSync(dir, { recursive: true, force: true });
});

function start(
  options: {
    url?: string;
    maxBytes?: number;
    spoolDir?: string;
    instance?: string;
    maxBuffered?: number;
  } = {},
) {
  const publisher = createUsagePublisher({
    url: options.url ?? proxy.url(amqp.url),
    topology,
    logger: recordingLogger(),
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    maxBuffered: options.maxBuffered,
    spool: {
      dir: options.spoolDir ?? dir,
      maxBytes: options.maxBytes ?? 10 * 1024 * 1024,
      instance: options.instance,
    },
  });
  publishers.push(publisher);
  return publisher;
}

const spoolFiles = () => readdirSync(dir).filter((f) => f.endsWith('.spool'));
const ids = (messages: Array<{ content: Buffer }>) =>
  messages.map((m) => (JSON.parse(m.content.toString()) as { id: string }).id);

describe('usage publisher disk spool', () => {
  it("spools what the broker cannot take (fsync'd) and replays it in order, exactly once, when it returns", async () => {
    await proxy.stop(); // RabbitMQ unreachable from the start
    const publisher = start();
    const events = Array.from({ length: 50 }, () => sampleEvent());
    for (const e of events) publisher.publish(e);
    await vi.waitFor(() => expect(publisher.stats()).toMatchObject({ spooled: 50, buffered: 0 }));
    expect(publisher.stats().spoolBytes).toBeGreaterThan(50 * 100);
    expect(spoolFiles()).toHaveLength(1);
    expect(publisher.canAdmit()).toBe(true);

    await proxy.start();
    expect(await publisher.flush(15_000)).toBe(true);
    expect(publisher.stats()).toMatchObject({ spooled: 0, spoolBytes: 0, published: 50, dropped: 0 });
    expect(spoolFiles()).toHaveLength(0);
    expect(ids(await drainEvents(amqp.url, topology.queue))).toEqual(events.map((e) => e.id));
  });

  it('spools the unconfirmed events when the connection drops mid-stream, losing and duplicating none', async () => {
    const publisher = start();
    const first = Array.from({ length: 20 }, () => sampleEvent());
    for (const e of first) publisher.publish(e);
    expect(await publisher.flush(10_000)).toBe(true);
    await proxy.stop();
    const during = Array.from({ length: 30 }, () => sampleEvent());
    for (const e of during) publisher.publish(e);
    await vi.waitFor(() => expect(publisher.stats().spooled).toBe(30));
    await proxy.start();
    expect(await publisher.flush(15_000)).toBe(true);
    const got = ids(await drainEvents(amqp.url, topology.queue));
    expect(new Set(got)).toEqual(new Set([...first, ...during].map((e) => e.id)));
    expect(got).toHaveLength(50);
  });

  it('a restarted process replays the spool a stopped one left behind', async () => {
    await proxy.stop();
    const crashed = start();
    const events = Array.from({ length: 10 }, () => sampleEvent());
    for (const e of events) crashed.publish(e);
    await vi.waitFor(() => expect(crashed.stats().spooled).toBe(10));
    // The "next start": a new publisher on the same directory, with the broker reachable.
    const next = start({ url: amqp.url });
    expect(await next.flush(15_000)).toBe(true);
    expect(ids(await drainEvents(amqp.url, topology.queue))).toEqual(events.map((e) => e.id));
    expect(spoolFiles()).toHaveLength(0);
  });

  it('close() before the broker confirmed puts the rest on disk instead of losing it', async () => {
    await proxy.stop();
    const publisher = createUsagePublisher({
      url: proxy.url(amqp.url),
      topology,
      logger: recordingLogger(),
      reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
      maxBuffered: 5,
      spool: { dir, maxBytes: 10 * 1024 * 1024 },
    });
    for (let i = 0; i < 3; i++) publisher.publish(sampleEvent());
    const closed = await publisher.close({ drainTimeoutMs: 50 });
    expect(closed.remaining).toBe(0);
    const next = start({ url: amqp.url });
    expect(await next.flush(15_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(3);
  });

  it('writes an event to its segment within publish() (a SIGKILL right after the answer loses nothing), fsyncs it with the batch', async () => {
    await proxy.stop();
    const publisher = start();
    await vi.waitFor(() => expect(publisher.stats().connected).toBe(false));
    const event = sampleEvent();
    publisher.publish(event);
    // Synchronously, before any fsync batch ran: the bytes are in the file (the page cache outlives
    // the process).
    const written = spoolFiles().map((f) => readFileSync(join(dir, f), 'utf8'));
    expect(written.join('')).toContain(event.id);
    expect(publisher.stats()).toMatchObject({ buffered: 1, spooled: 0 });
    await vi.waitFor(() => expect(publisher.stats()).toMatchObject({ buffered: 0, spooled: 1 }));
  });

  it('refuses new billable work (canAdmit false) when the spool is full and the broker is away, never dropping', async () => {
    await proxy.stop();
    const publisher = start({ maxBytes: 2_000 });
    for (let i = 0; i < 10; i++) publisher.publish(sampleEvent());
    await vi.waitFor(() => expect(publisher.canAdmit()).toBe(false));
    expect(publisher.stats().dropped).toBe(0);
    const kept = publisher.stats().spooled + publisher.stats().buffered;
    expect(kept).toBe(10); // on disk or in memory, none lost
    await proxy.start();
    expect(await publisher.flush(15_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(10);
    expect(publisher.canAdmit()).toBe(true);
  });

  it('refuses new billable work when the spool directory cannot be written and the broker is away', async () => {
    const notADir = join(dir, 'file');
    writeFileSync(notADir, 'x');
    await proxy.stop();
    const publisher = start({ spoolDir: join(notADir, 'spool') });
    expect(existsSync(join(notADir, 'spool'))).toBe(false);
    publisher.publish(sampleEvent());
    await vi.waitFor(() => expect(publisher.canAdmit()).toBe(false));
    expect(publisher.stats()).toMatchObject({ dropped: 0, buffered: 1 });
  });
});

describe('spool directory (issue 23)', () => {
  const mode = (path: string) => statSync(path).mode & 0o777;

  /** Spools `n` events of `instance` while the broker is away, then stops that publisher. */
  async function leaveSpooled(instance: string | undefined, n: number) {
    await proxy.stop();
    const publisher = start({ instance });
    for (let i = 0; i < n; i++) publisher.publish(sampleEvent());
    await vi.waitFor(() => expect(publisher.stats().spooled).toBe(n));
    expect((await publisher.close({ drainTimeoutMs: 0 })).remaining).toBe(0);
    publishers.splice(publishers.indexOf(publisher), 1);
    await proxy.start();
  }

  it('keeps the segments in a private (0700) directory of the instance, each file 0600', async () => {
    const base = join(dir, 'state', 'spool');
    await proxy.stop();
    const publisher = start({ spoolDir: base, instance: 'tollgate' });
    publisher.publish(sampleEvent());
    await vi.waitFor(() => expect(publisher.stats().spooled).toBe(1));
    const own = join(base, 'tollgate');
    expect(mode(own)).toBe(0o700);
    const files = readdirSync(own).filter((f) => f.endsWith('.spool'));
    expect(files).toHaveLength(1);
    expect(mode(join(own, files[0] as string))).toBe(0o600);
    expect(readdirSync(base)).toEqual(['tollgate']); // nothing of the instance outside its directory
  });

  it('takes group and other permissions away from an existing directory of its own', async () => {
    const own = join(dir, 'inst');
    mkdirSync(own);
    chmodSync(own, 0o777);
    start({ instance: 'inst' });
    expect(mode(own)).toBe(0o700);
  });

  it('replays only the configured instance’s segments', async () => {
    await leaveSpooled('staging', 3);
    const other = start({ url: amqp.url, instance: 'production' });
    await vi.waitFor(() => expect(other.stats().connected).toBe(true));
    expect(await other.flush(5_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(0);
    expect(readdirSync(join(dir, 'staging')).filter((f) => f.endsWith('.spool'))).toHaveLength(1);
    const same = start({ url: amqp.url, instance: 'staging' });
    expect(await same.flush(15_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(3);
  });

  it('adopts the segments an older version left in the base directory (an upgrade loses nothing)', async () => {
    await leaveSpooled(undefined, 2); // the old layout: segments straight in the base directory
    expect(spoolFiles()).toHaveLength(1);
    const upgraded = start({ url: amqp.url, instance: 'tollgate' });
    expect(await upgraded.flush(15_000)).toBe(true);
    expect(await drainEvents(amqp.url, topology.queue)).toHaveLength(2);
    expect(spoolFiles()).toHaveLength(0);
  });

  it('refuses a spool directory that is a symlink (canAdmit false while the broker is away)', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'tollgate-spool-elsewhere-'));
    try {
      symlinkSync(elsewhere, join(dir, 'linked'));
      await proxy.stop();
      const publisher = start({ instance: 'linked', maxBuffered: 1 });
      publisher.publish(sampleEvent());
      publisher.publish(sampleEvent());
      await vi.waitFor(() => expect(publisher.canAdmit()).toBe(false));
      expect(readdirSync(elsewhere)).toEqual([]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a spool directory another user owns', async () => {
    const theirs = join(dir, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    chownSync(theirs, 12345, 12345);
    await proxy.stop();
    const publisher = start({ instance: 'theirs', maxBuffered: 1 });
    publisher.publish(sampleEvent());
    publisher.publish(sampleEvent());
    await vi.waitFor(() => expect(publisher.canAdmit()).toBe(false));
    expect(readdirSync(theirs)).toEqual([]);
  });
});
