import {
  closeSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { EventsLogger } from './logger';
import { adoptLegacySegments, ensurePrivateDir, instanceDirName } from './spool-dir';

export interface SpoolOptions {
  /**
   * Base directory of the spool (created if missing). Several processes may share it: each instance
   * keeps its segments in its own private subdirectory (spool-dir.ts).
   */
  dir: string;
  /**
   * Which deployment the events belong to (the proxy passes its AMQP_PREFIX: the exchange they are
   * replayed into). Segments live in `<dir>/<instance>/` (0700), and only those are replayed. Absent:
   * `dir` itself is the private directory.
   */
  instance?: string;
  /** Most bytes on disk (every segment of the directory) before the spool refuses more. */
  maxBytes: number;
  logger: EventsLogger;
}

const SEGMENT = /^usage-(\d+)-(\d+)-(\d+)\.spool$/; // usage-<pid>-<start ms>-<seq>.spool
const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * The publisher's disk spool: usage events the broker cannot take right now, as newline-delimited
 * JSON in append-only segment files, each write batch fsync'd before it counts as spooled. A segment
 * is replayed (in order) once the broker is back and deleted only after every event in it was
 * confirmed, so a crash during replay replays it again (billing records an id once). Segments of a
 * process that died are adopted by the next process that starts on the same directory.
 *
 * Writes are synchronous on purpose: they run only while the broker is unreachable (when latency is
 * already degraded), each event is written when it is published (before its answer ends), the fsyncs
 * are batched per event-loop turn, and "on disk" must mean fsync'd before the publisher forgets the
 * event.
 */
export class Spool {
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly log: EventsLogger;
  private readonly prefix = `usage-${process.pid}-${Date.now()}-`;
  private seq = 0;
  private fd: number | null = null;
  private currentFile: string | null = null;
  private currentEvents = 0;
  private syncScheduled = false;
  private failed = false;
  private failedAt = 0;
  private totalBytes = 0;
  /** Events on disk and fsync'd (all segments this process knows of, own and adopted). */
  events = 0;

  constructor(options: SpoolOptions) {
    const { instance } = options;
    this.dir = instance === undefined ? options.dir : join(options.dir, instanceDirName(instance));
    this.maxBytes = options.maxBytes;
    this.log = options.logger;
    try {
      ensurePrivateDir(this.dir);
      if (instance !== undefined) this.adoptLegacy(options.dir);
      for (const f of readdirSync(this.dir))
        if (SEGMENT.test(f)) this.totalBytes += statSync(join(this.dir, f)).size;
    } catch (err) {
      this.fail(err, 'spool directory is not usable');
    }
  }

  /** Segments an older version wrote straight into the base directory: replayed as this process's. */
  private adoptLegacy(base: string): void {
    const names = adoptLegacySegments(
      base,
      this.dir,
      () => `${this.prefix}${String(this.seq++).padStart(6, '0')}.spool`,
      (pid) => pid !== process.pid && processAlive(pid),
    );
    for (const name of names) {
      const n = this.countEvents(join(this.dir, name));
      this.events += n;
      this.log.warn({ segment: name, events: n }, 'adopted a usage spool segment of the old layout');
    }
  }

  /**
   * The spool can take more events: below its size bound, and no write failed in the last 5 s (after
   * that a new write is tried again, so a disk that had a hiccup is used again).
   */
  healthy(): boolean {
    return this.totalBytes < this.maxBytes && (!this.failed || Date.now() - this.failedAt > 5_000);
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /**
   * Writes `bodies` to the current segment at once and fsyncs them with the rest of this event-loop
   * turn's batch; `onDurable` runs once they are fsync'd, `onFailed` if the write failed (the caller
   * keeps them in memory and stops admitting). The write itself is synchronous so that an event
   * published before its answer's last bytes are sent is in the page cache, which outlives the
   * process, before the client can see the answer: a SIGKILL then loses nothing (fsync is what makes
   * it survive the host too).
   */
  append(bodies: Buffer[], onDurable: () => void, onFailed: () => void): void {
    try {
      if (!this.healthy()) throw new Error(this.failed ? 'an earlier write failed' : 'spool is full');
      this.failed = false;
      if (this.fd === null) this.openSegment();
      const data = Buffer.concat(bodies.flatMap((b) => [b, NEWLINE]));
      writeSync(this.fd as number, data);
      this.totalBytes += data.length;
      this.currentEvents += bodies.length;
    } catch (err) {
      this.fail(err, 'usage events could not be written to the spool');
      onFailed();
      return;
    }
    this.callbacks.push({ count: bodies.length, onDurable, onFailed });
    if (this.syncScheduled) return;
    this.syncScheduled = true;
    setImmediate(() => this.sync());
  }

  private callbacks: Array<{ count: number; onDurable: () => void; onFailed: () => void }> = [];

  /** fsyncs what was written since the last sync (also called, synchronously, before a segment closes). */
  sync(): void {
    this.syncScheduled = false;
    const callbacks = this.callbacks;
    this.callbacks = [];
    if (callbacks.length === 0) return;
    try {
      if (this.fd !== null) fsyncSync(this.fd);
    } catch (err) {
      // The events may or may not be on disk: the caller keeps them in memory too (a replay of both
      // is harmless, billing records an id once).
      this.fail(err, 'usage events could not be fsynced to the spool');
      for (const c of callbacks) c.onFailed();
      return;
    }
    // Counted as spooled once fsync'd (the publisher stops counting them as buffered then).
    for (const c of callbacks) this.events += c.count;
    for (const c of callbacks) c.onDurable();
    if (this.totalBytes >= this.maxBytes) {
      this.log.error(
        { spoolBytes: this.totalBytes, maxBytes: this.maxBytes, dir: this.dir },
        'usage spool is full: new billable requests are refused until RabbitMQ takes the spooled events',
      );
    }
  }

  private openSegment(): void {
    this.currentFile = join(this.dir, `${this.prefix}${String(this.seq++).padStart(6, '0')}.spool`);
    this.fd = openSync(this.currentFile, 'a', 0o600);
    this.currentEvents = 0;
  }

  private fail(err: unknown, message: string): void {
    if (!this.failed) this.log.error({ err, dir: this.dir }, message);
    this.failed = true;
    this.failedAt = Date.now();
  }

  /**
   * Closes the segment being written (it becomes replayable) and returns every complete segment
   * this process may replay: its own, and those of processes that are no longer running, oldest first.
   */
  replayable(): string[] {
    if (this.fd !== null) {
      this.sync();
      closeSync(this.fd);
      this.fd = null;
      if (this.currentEvents === 0 && this.currentFile) this.removeFile(this.currentFile, 0);
      this.currentFile = null;
    }
    let files: string[];
    try {
      files = readdirSync(this.dir);
    } catch {
      return [];
    }
    const mine: string[] = [];
    for (const f of files) {
      const m = SEGMENT.exec(f);
      if (!m) continue;
      const own = f.startsWith(this.prefix);
      if (!own && processAlive(Number(m[1])) && Number(m[1]) !== process.pid) continue;
      if (!own) {
        // Adopt a dead process's segment: rename it into our name space so no other process takes it too.
        const adopted = `${this.prefix}${String(this.seq++).padStart(6, '0')}.spool`;
        try {
          renameSync(join(this.dir, f), join(this.dir, adopted));
        } catch {
          continue; // another process adopted it first
        }
        const n = this.countEvents(join(this.dir, adopted));
        this.events += n;
        this.log.warn({ segment: f, events: n }, 'adopted a usage spool segment of a stopped process');
        mine.push(adopted);
        continue;
      }
      mine.push(f);
    }
    return mine.sort().map((f) => join(this.dir, f));
  }

  private countEvents(file: string): number {
    return this.read(file).length;
  }

  /** The events of a segment, in order (a torn last line from a crash mid-write is skipped). */
  read(file: string): Buffer[] {
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch {
      return [];
    }
    const out: Buffer[] = [];
    let start = 0;
    for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, start)) {
      if (i > start) out.push(data.subarray(start, i));
      start = i + 1;
    }
    return out;
  }

  /** Deletes a replayed segment once every event in it was confirmed. */
  removeFile(file: string, events: number): void {
    let size = 0;
    try {
      size = statSync(file).size;
      unlinkSync(file);
    } catch {
      return;
    }
    this.totalBytes = Math.max(0, this.totalBytes - size);
    this.events = Math.max(0, this.events - events);
  }

  close(): void {
    this.sync();
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
      if (this.currentEvents === 0 && this.currentFile) this.removeFile(this.currentFile, 0);
    }
  }
}

const NEWLINE = Buffer.from('\n');
