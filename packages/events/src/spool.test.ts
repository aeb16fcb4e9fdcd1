import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

function start(options: { url?: string; maxBytes?: number; spoolDir?: string } = {}) {
  const publisher = createUsagePublisher({
    url: options.url ?? proxy.url(amqp.url),
    topology,
    logger: recordingLogger(),
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    spool: { dir: options.spoolDir ?? dir, maxBytes: options.maxBytes ?? 10 * 1024 * 1024 },
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
