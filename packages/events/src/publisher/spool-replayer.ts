import type { EventsLogger } from '../logger';
import type { Spool } from '../spool';
import type { Entry } from './confirm-window';

/** The fields of a spooled event body the replay reads. */
interface SpooledFields {
  id?: unknown;
  finished_at?: unknown;
  account_id?: unknown;
}

/**
 * Replays the disk spool, one segment at a time: its events go back through the normal confirm path
 * and the segment is deleted once the last of them is confirmed. Segments left by stopped processes
 * are adopted at start. A segment being replayed when the connection drops is replayed again from its
 * start later (billing records an event id once).
 */
export class SpoolReplayer {
  private replay: { file: string; events: number; outstanding: number } | null = null;
  private segments: string[];

  constructor(
    private readonly spool: Spool,
    private readonly log: EventsLogger,
    /** The partition of a spooled event (from its body); 0 when unpartitioned. */
    private readonly partitionOf: (parsed: SpooledFields | null) => number = () => 0,
  ) {
    this.segments = spool.replayable();
  }

  /** A segment is being replayed (its events are in memory until all are confirmed). */
  get active(): boolean {
    return this.replay !== null;
  }

  /** The next segment's events as entries (oldest first), or null when nothing is left to replay. */
  next(now = Date.now()): Entry[] | null {
    if (this.replay) return null;
    for (;;) {
      if (this.segments.length === 0) {
        if (this.spool.events === 0) return null;
        this.segments = this.spool.replayable();
      }
      const file = this.segments.shift();
      if (!file) return null;
      const bodies = this.spool.read(file);
      if (bodies.length === 0) {
        this.spool.removeFile(file, 0);
        continue;
      }
      this.replay = { file, events: bodies.length, outstanding: bodies.length };
      const timestamp = Math.floor(now / 1000);
      this.log.info({ segment: file, events: bodies.length }, 'replaying spooled usage events');
      return bodies.map((body) => this.entryOf(body, file, timestamp, now));
    }
  }

  /** An entry was confirmed: the segment goes once every one of its events is. */
  confirmed(entry: Entry): void {
    const r = this.replay;
    if (!entry.segment || !r || entry.segment !== r.file) return;
    if (--r.outstanding === 0) {
      this.spool.removeFile(r.file, r.events);
      this.replay = null;
    }
  }

  /** The connection dropped mid-replay: the segment is still on disk; replay it again from the start. */
  rewind(): void {
    if (this.replay) this.segments.unshift(this.replay.file);
    this.replay = null;
  }

  private entryOf(body: Buffer, file: string, timestamp: number, now: number): Entry {
    let id = '';
    let sentAt = now;
    let parsed: SpooledFields | null = null;
    try {
      parsed = JSON.parse(body.toString('utf8')) as SpooledFields | null;
      id = String(parsed?.id ?? '');
      // Handed over when it finished: the signed time stays the event's own, however long it waited.
      const finished = typeof parsed?.finished_at === 'string' ? Date.parse(parsed.finished_at) : Number.NaN;
      if (Number.isFinite(finished) && finished < sentAt) sentAt = finished;
    } catch {
      // a torn or foreign line: published as is, billing dead-letters what it cannot decode
    }
    const partition = this.partitionOf(parsed);
    return { id, body, timestamp, sentAt, confirmed: false, dropped: false, segment: file, partition };
  }
}
