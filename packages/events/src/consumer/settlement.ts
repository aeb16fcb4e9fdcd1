import type { Channel, ConsumeMessage } from 'amqplib';
import { DEAD_LETTER_REASON_HEADER } from '../dead-letters';
import type { EventsLogger } from '../logger';
import type { UsageTopology } from '../topology';
import type { UsageEvent } from '../usage-event';
import type { Batch } from './batch-aggregator';
import type { RetryingHandler } from './retrying-handler';

/** Runs an ack/nack/publish on a channel that may have died (the broker then requeues by itself). */
function settle(fn: () => void): void {
  try {
    fn();
  } catch {
    // The channel died: the broker requeues every unacked message by itself.
  }
}

export interface SettlementOptions {
  topology: UsageTopology;
  log: EventsLogger;
  counters: { handled: number; deadLettered: number };
  /** The consumer's live channel: a batch of another channel is abandoned (redelivered). */
  channel: () => Channel | null;
  handler: RetryingHandler;
  /** The batch's channel is gone or the consumer is stopping: stop retrying, it is redelivered. */
  abandoned: (batch: Batch) => boolean;
  /** Attempts of a single event failing permanently before it is dead-lettered. */
  permanentAttempts: number;
}

/**
 * How deliveries end: acked after their events were handled, dead-lettered with a reason (refused),
 * nacked to the dead-letter queue (invalid, or failing on their own), one by one after a permanent
 * batch failure so one poison event never takes others with it.
 */
export class Settlement {
  /** Batch messages dead-lettered at receipt (an invalid line) whose valid events are still handled. */
  private readonly settledAtReceipt = new WeakSet<ConsumeMessage>();

  constructor(private readonly options: SettlementOptions) {}

  /**
   * An invalid delivery (undecodable, schema-invalid, or holding no event) to the dead-letter queue.
   * A batch message goes whole (the dead-letter replay splits it); its `validEvents` are still handled.
   */
  invalid(ch: Channel, msg: ConsumeMessage, reason: string, validEvents: number): void {
    const { log, topology, counters } = this.options;
    counters.deadLettered++;
    log.error(
      {
        reason,
        messageId: msg.properties.messageId,
        type: msg.properties.type,
        redelivered: msg.fields.redelivered,
        bytes: msg.content.length,
        validEvents,
      },
      `invalid usage event sent to the dead-letter queue ${topology.deadLetterQueue}: ${reason}`,
    );
    // Not "nack multiple": earlier valid deliveries still belong to a batch.
    settle(() => ch.nack(msg, false, false));
    if (validEvents > 0) this.settledAtReceipt.add(msg);
  }

  /** Every event handled (`handled` distinct ones): one multiple ack covers the batch. */
  ackAll(batch: Batch, handled: number): void {
    const last = batch.last;
    if (last !== null) settle(() => batch.channel.ack(last, true));
    this.options.counters.handled += handled;
  }

  /** A handled batch with refused events: each message acked, or dead-lettered with its reason. */
  settleEach(batch: Batch, rejected: ReadonlyMap<string, string>): void {
    let reason: string | null = null; // of the current message
    for (let i = 0; i < batch.events.length; i++) {
      const event = batch.events[i] as UsageEvent;
      const msg = batch.messages[i] as ConsumeMessage;
      const refused = rejected.get(event.id);
      if (refused === undefined) this.options.counters.handled++;
      else reason ??= `event ${event.id}: ${refused}`;
      if (batch.messages[i + 1] === msg) continue;
      if (this.settledAtReceipt.has(msg)) reason = null;
      else if (reason === null) settle(() => batch.channel.ack(msg, false));
      else this.refuse(batch.channel, msg, reason);
      reason = null;
    }
  }

  /**
   * Dead-letters a message with the reason it can never be recorded: a copy goes to the dead-letter
   * exchange with `x-tollgate-reason` (a nack could carry no reason), then the delivery is acked.
   */
  refuse(ch: Channel, msg: ConsumeMessage, reason: string): void {
    const { log, topology, counters } = this.options;
    counters.deadLettered++;
    log.error(
      { reason, messageId: msg.properties.messageId, type: msg.properties.type, bytes: msg.content.length },
      `usage message refused, sent to the dead-letter queue ${topology.deadLetterQueue}: ${reason}`,
    );
    const p = msg.properties;
    settle(() => {
      ch.publish(topology.deadLetterExchange, '', msg.content, {
        persistent: true,
        contentType: p.contentType,
        type: p.type,
        messageId: p.messageId,
        timestamp: p.timestamp,
        appId: p.appId,
        headers: { ...(p.headers ?? {}), [DEAD_LETTER_REASON_HEADER]: reason },
      });
      ch.ack(msg, false);
    });
  }

  /**
   * After a permanent batch failure: each event alone, so one poison event never takes others. A
   * message is settled after its last event: acked when every one was handled, else dead-lettered
   * whole (its handled events are recorded already; billing dedupes them if it is replayed).
   */
  async oneByOne(batch: Batch): Promise<void> {
    const { counters, handler, permanentAttempts } = this.options;
    const abandoned = () => this.options.abandoned(batch);
    // event id -> handled (true), failed (false) or refused (its reason)
    const done = new Map<string, boolean | string>();
    let failed: UsageEvent | null = null; // of the current message
    let reason: string | null = null; // of the current message's first refused event
    for (let i = 0; i < batch.events.length; i++) {
      const event = batch.events[i] as UsageEvent;
      const msg = batch.messages[i] as ConsumeMessage;
      let ok = done.get(event.id);
      if (ok === undefined) {
        const r = await handler.attempt([event], permanentAttempts, abandoned);
        if (r === null) return; // the rest (still unacked) is redelivered
        ok = r === false ? false : (r.get(event.id) ?? true);
        done.set(event.id, ok);
        if (ok === true) counters.handled++;
      }
      if (batch.channel !== this.options.channel()) return;
      if (ok === false) failed ??= event;
      else if (ok !== true) reason ??= `event ${event.id}: ${ok}`;
      if (batch.messages[i + 1] === msg) continue; // more events of this message follow
      if (this.settledAtReceipt.has(msg)) failed = null;
      else if (reason !== null) this.refuse(batch.channel, msg, reason);
      else if (failed === null) settle(() => batch.channel.ack(msg, false));
      else this.deadLetter(batch, [msg], failed);
      failed = null;
      reason = null;
    }
  }

  /** Messages whose `event` failed on its own: nacked to the dead-letter queue. */
  deadLetter(batch: Batch, messages: ConsumeMessage[], event: UsageEvent): void {
    const { log, topology, counters } = this.options;
    const unique = [...new Set(messages)].filter((m) => !this.settledAtReceipt.has(m));
    counters.deadLettered += unique.length;
    log.error(
      { eventId: event.id, accountId: event.account_id, keyId: event.key_id },
      `usage event failed on its own; sent to the dead-letter queue ${topology.deadLetterQueue}`,
    );
    for (const m of unique) settle(() => batch.channel.nack(m, false, false));
  }
}
