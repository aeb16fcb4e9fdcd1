import type { Channel, ConsumeMessage } from 'amqplib';
import type { UsageEvent } from '../usage-event';

export interface Batch {
  events: UsageEvent[];
  /**
   * The delivery of each event, in order (same index). The events of one message (`usage.batch.v1`)
   * are contiguous and share it: it is acked once all of them are handled.
   */
  messages: ConsumeMessage[];
  /** The last delivery to ack (multiple); null when every message was dead-lettered at receipt. */
  last: ConsumeMessage | null;
  channel: Channel;
}

/**
 * Gathers received events into batches of `batchSize` events (the events of one message are never
 * split, so a batch may hold up to one message's events more) or whatever came within `timeoutMs` of
 * a batch's first event, and hands each sealed batch on, in delivery order.
 */
export class BatchAggregator {
  private collecting: Batch | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly batchSize: number,
    private readonly timeoutMs: number,
    private readonly onSealed: (batch: Batch) => void,
  ) {}

  /** A batch is being filled. */
  get filling(): boolean {
    return this.collecting !== null;
  }

  /**
   * The valid events of one delivery. `ackable`: the delivery is not settled yet (it was not
   * dead-lettered at receipt), so acking the batch covers it.
   */
  add(channel: Channel, msg: ConsumeMessage, events: readonly UsageEvent[], ackable: boolean): void {
    if (!this.collecting) {
      this.collecting = { events: [], messages: [], last: null, channel };
      this.timer = setTimeout(this.seal, this.timeoutMs);
    }
    const batch = this.collecting;
    for (const event of events) {
      batch.events.push(event);
      batch.messages.push(msg);
    }
    if (ackable) batch.last = msg;
    if (batch.events.length >= this.batchSize) this.seal();
  }

  /** Hands the batch being filled on now (if any). */
  readonly seal = (): void => {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.collecting;
    this.collecting = null;
    if (batch) this.onSealed(batch);
  };

  /** Forgets the batch being filled (its deliveries are unacked: the broker redelivers them). */
  drop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.collecting = null;
  }
}
