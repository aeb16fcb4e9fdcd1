import { createTcpProxy, createTestAmqp, hostPortOf, type TcpProxy } from '@tollgate/testkit';
import type { Channel } from 'amqplib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AmqpSupervisor, superviseAmqpConnection } from './connection';
import { recordingLogger } from './test-support';

let proxy: TcpProxy | null = null;
let supervisor: AmqpSupervisor<Channel> | null = null;
afterEach(async () => {
  await supervisor?.close();
  await proxy?.close();
  supervisor = null;
  proxy = null;
});

function supervise(url: string) {
  const events: string[] = [];
  const ups: Array<{ restored: boolean; downMs: number }> = [];
  const logger = recordingLogger();
  supervisor = superviseAmqpConnection<Channel>({
    url,
    logger,
    connectionName: 'tollgate-test-supervisor',
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    retryingNote: 'test retrying',
    async setup(conn) {
      events.push('setup');
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      return ch;
    },
    onUp(_ch, info) {
      events.push('up');
      ups.push(info);
    },
    onDown(_ch, err) {
      events.push(`down: ${err.message}`);
    },
  });
  return { events, ups, logger, s: supervisor };
}

describe('AMQP connection supervisor', () => {
  it('connects, notices a cut connection, reconnects with a fresh session; reset() forces a new one', async () => {
    const amqp = createTestAmqp();
    proxy = await createTcpProxy(hostPortOf(amqp.url));
    const { events, ups, logger, s } = supervise(proxy.url(amqp.url));
    await vi.waitFor(() => expect(s.session).not.toBeNull());
    expect(ups[0]?.restored).toBe(false);
    const first = s.session;

    await proxy.stop(); // sockets reset, connections refused
    await vi.waitFor(() => expect(events.some((e) => e.startsWith('down'))).toBe(true));
    expect(s.session).toBeNull();
    await new Promise((r) => setTimeout(r, 200)); // a few failed attempts
    await proxy.start();
    await vi.waitFor(() => expect(s.session).not.toBeNull(), { timeout: 5000 });
    expect(s.session).not.toBe(first);
    expect(ups[1]?.restored).toBe(true);
    expect(ups[1]?.downMs).toBeGreaterThanOrEqual(150);
    expect(logger.messages('debug').length + logger.messages('warn').length).toBeGreaterThan(0);

    const second = s.session;
    s.reset(new Error('channel closed'));
    expect(events.at(-1)).toBe('down: channel closed');
    await vi.waitFor(() => expect(s.session).not.toBeNull());
    expect(s.session).not.toBe(second);
    expect(s.blocked).toBe(false);
  });

  it('keeps retrying while the broker is unreachable at startup and warns once', async () => {
    const amqp = createTestAmqp();
    proxy = await createTcpProxy(hostPortOf(amqp.url));
    await proxy.stop();
    const { events, logger, s } = supervise(proxy.url(amqp.url));
    await new Promise((r) => setTimeout(r, 300));
    expect(s.session).toBeNull();
    expect(logger.messages('warn')).toEqual(['RabbitMQ unreachable at startup; test retrying']);
    await proxy.start();
    await vi.waitFor(() => expect(s.session).not.toBeNull(), { timeout: 5000 });
    expect(events).toEqual(['setup', 'up']);
  });

  it('close() stops reconnecting and closes the connection', async () => {
    const amqp = createTestAmqp();
    proxy = await createTcpProxy(hostPortOf(amqp.url));
    const { events, s } = supervise(proxy.url(amqp.url));
    await vi.waitFor(() => expect(s.session).not.toBeNull());
    await s.close();
    expect(s.session).toBeNull();
    await vi.waitFor(() => expect(proxy?.connections).toBe(0));
    await new Promise((r) => setTimeout(r, 200));
    expect(events).toEqual(['setup', 'up']);
  });
});
