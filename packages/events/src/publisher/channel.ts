import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { errorMessage } from '../backoff';
import type { EventsLogger } from '../logger';
import { declareUsageTopology, type UsageTopology } from '../topology';

/**
 * The whole topology when the broker user may declare it (development, tests); else only the usage
 * exchange: the proxy's own user (docs/operations.md "Security") may write to that exchange and
 * nothing else, and billing (or the provisioning) declares its queues and their binding.
 */
async function declarePublisherTopology(
  conn: ChannelModel,
  topology: UsageTopology,
  log: EventsLogger,
): Promise<void> {
  const probe = await conn.createChannel();
  probe.on('error', () => {});
  try {
    await declareUsageTopology(probe, topology);
    await probe.close().catch(() => {});
  } catch (err) {
    if (!/ACCESS_REFUSED/.test(errorMessage(err))) throw err;
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    await ch.assertExchange(topology.exchange, 'topic', { durable: true });
    await ch.close().catch(() => {});
    log.info({ exchange: topology.exchange }, 'broker user may declare the usage exchange only; declared it');
  }
}

export interface PublisherChannelHooks {
  /** The channel closed on its own (not by us). */
  onClose(ch: ConfirmChannel): void;
  /** The socket buffer drained: publishing may go on. */
  onDrain(ch: ConfirmChannel): void;
  /** A mandatory message was routed to no queue. */
  onReturn(messageId: unknown): void;
}

/** A confirm channel for publishing usage events (topology declared first when `declare`). */
export async function openPublisherChannel(
  conn: ChannelModel,
  options: { topology: UsageTopology; declare: boolean; log: EventsLogger; hooks: PublisherChannelHooks },
): Promise<ConfirmChannel> {
  const { hooks } = options;
  if (options.declare) await declarePublisherTopology(conn, options.topology, options.log);
  const ch = await conn.createConfirmChannel();
  ch.on('error', () => {});
  ch.on('close', () => hooks.onClose(ch));
  ch.on('drain', () => hooks.onDrain(ch));
  ch.on('return', (msg: { properties: { messageId?: unknown } }) => hooks.onReturn(msg.properties.messageId));
  return ch;
}
