import { Fifo } from '../fifo';

/** One usage event in the publisher's memory, from `publish()` to its broker confirm. */
export interface Entry {
  id: string;
  body: Buffer;
  /** AMQP `timestamp` (seconds). */
  timestamp: number;
  /** When the event was handed to the publisher (ms); signed with its message. */
  sentAt: number;
  confirmed: boolean;
  dropped: boolean;
  /** Replayed from this spool segment (already on disk). */
  segment?: string;
  /** The usage partition (queue) it is routed to; its lane in `pending`. */
  partition: number;
}

/**
 * Events not yet sent on the current channel, one FIFO lane per partition (a message carries the
 * events of one partition only). Each lane keeps publish order, which is all per-account order needs:
 * an account's events always share a partition.
 */
export class PendingLanes {
  private readonly lanes: Fifo<Entry>[];
  private cursor = 0;
  private count = 0;

  constructor(partitions: number) {
    this.lanes = Array.from({ length: Math.max(1, partitions) }, () => new Fifo<Entry>());
  }

  get length(): number {
    return this.count;
  }

  push(entry: Entry): void {
    this.lane(entry.partition).push(entry);
    this.count++;
  }

  /** The next lane to send from (round robin over the non-empty ones), or null when all are empty. */
  nextLane(): Fifo<Entry> | null {
    if (this.count === 0) return null;
    for (let i = 0; i < this.lanes.length; i++) {
      const lane = this.lanes[(this.cursor + i) % this.lanes.length] as Fifo<Entry>;
      if (lane.length > 0) {
        this.cursor = (this.cursor + i + 1) % this.lanes.length;
        return lane;
      }
    }
    return null;
  }

  /** Removes entries a caller took from a lane it got from `nextLane` (keeps the count right). */
  taken(n: number): void {
    this.count -= n;
  }

  /** Removes and returns the oldest entry of every lane (by hand-over time). */
  shiftOldest(): Entry | undefined {
    let oldest: Fifo<Entry> | null = null;
    for (const lane of this.lanes) {
      const head = lane.peek();
      if (head && (!oldest || head.sentAt < (oldest.peek() as Entry).sentAt)) oldest = lane;
    }
    const entry = oldest?.shift();
    if (entry) this.count--;
    return entry;
  }

  /** Puts `entries` back before everything already queued, each lane keeping their order. */
  prepend(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const byLane = new Map<number, Entry[]>();
    for (const e of entries) {
      const list = byLane.get(e.partition);
      if (list) list.push(e);
      else byLane.set(e.partition, [e]);
    }
    for (const [partition, list] of byLane) this.lane(partition).prepend(list);
    this.count += entries.length;
  }

  /** Every entry, lane after lane (each in order). */
  toArray(): Entry[] {
    return this.lanes.flatMap((lane) => lane.toArray());
  }

  clear(): void {
    for (const lane of this.lanes) lane.clear();
    this.count = 0;
  }

  private lane(partition: number): Fifo<Entry> {
    return (this.lanes[partition] ?? this.lanes[0]) as Fifo<Entry>;
  }
}

/**
 * The publisher's memory of events: `pending` (not sent on the current channel) and the confirm
 * window (sent, awaiting the broker's confirm, in send order, at most `maxInFlight` open). An event
 * leaves memory only when confirmed, dropped, or moved to the disk spool.
 */
export class ConfirmWindow {
  readonly pending: PendingLanes;
  private readonly inflight = new Fifo<Entry>();
  /** Entries of `inflight` neither confirmed nor dropped. */
  private openCount = 0;
  /** Events held in memory and not yet confirmed (those being written to the spool included). */
  buffered = 0;

  constructor(
    readonly maxInFlight: number,
    partitions = 1,
  ) {
    this.pending = new PendingLanes(partitions);
  }

  /** Sent entries awaiting their confirm. */
  get open(): number {
    return this.openCount;
  }

  /** How many more events may be sent before the window is full. */
  room(): number {
    return this.maxInFlight - this.openCount;
  }

  /** `entries` went out in one message. */
  sent(entries: readonly Entry[]): void {
    for (const entry of entries) this.inflight.push(entry);
    this.openCount += entries.length;
  }

  /**
   * The broker confirmed the message carrying `entries`: each leaves memory (`onConfirmed` sees every
   * newly confirmed entry, dropped or not). Returns how many were published (not dropped meanwhile).
   */
  confirm(entries: readonly Entry[], onConfirmed: (entry: Entry) => void): number {
    let published = 0;
    for (const entry of entries) {
      if (entry.confirmed) continue;
      entry.confirmed = true;
      if (!entry.dropped) {
        this.openCount--;
        this.buffered--;
        published++;
      }
      onConfirmed(entry);
    }
    while (this.inflight.peek()?.confirmed) this.inflight.shift();
    return published;
  }

  /**
   * Forgets the oldest event not yet confirmed (the buffer is full): a pending one, or — only when
   * the bound is tiny — one already on the wire. False when there is none.
   */
  dropOldest(): boolean {
    let victim = this.pending.shiftOldest();
    if (!victim) {
      for (const entry of this.inflight.toArray()) {
        if (!entry.confirmed && !entry.dropped) {
          victim = entry;
          entry.dropped = true;
          this.openCount--;
          break;
        }
      }
    }
    if (!victim) return false;
    this.buffered--;
    return true;
  }

  /** The channel is gone: every unconfirmed entry goes back before the pending ones, in order. */
  requeueUnconfirmed(): void {
    const unconfirmed = this.unconfirmed();
    this.inflight.clear();
    this.openCount = 0;
    this.pending.prepend(unconfirmed);
  }

  /** Sent entries neither confirmed nor dropped, in send order. */
  unconfirmed(): Entry[] {
    return this.inflight.toArray().filter((e) => !e.confirmed && !e.dropped);
  }

  /** Forgets every sent and pending entry (the caller spooled or counted them). */
  clear(): void {
    this.inflight.clear();
    this.openCount = 0;
    this.pending.clear();
  }
}
