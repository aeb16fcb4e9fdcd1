import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from '../spool';
import { recordingLogger } from '../test-support';
import { SpoolReplayer } from './spool-replayer';

let dir: string;
let spool: Spool;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-replayer-'));
  spool = new Spool({ dir, maxBytes: 1 << 20, logger: recordingLogger() });
});
afterEach(() => {
  spool.close();
  rmSync(dir, { recursive: true, force: true });
});

const body = (id: string, finishedAt: string, account = 'a') =>
  Buffer.from(JSON.stringify({ id, finished_at: finishedAt, account_id: account }));
const segments = () => readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.spool'));
const appended = (bodies: Buffer[]) =>
  new Promise<void>((resolve, reject) =>
    spool.append(bodies, resolve, () => reject(new Error('spool refused'))),
  );

describe('SpoolReplayer', () => {
  it('replays a segment in order, signs with each event’s finished_at, and deletes it once all are confirmed', async () => {
    await appended([
      body('e1', '2026-11-26T10:00:00.000Z'),
      body('e2', '2026-11-26T10:00:01.000Z'),
      Buffer.from('{torn'),
    ]);
    spool.sync();
    const replayer = new SpoolReplayer(spool, recordingLogger(), (parsed) =>
      parsed?.account_id === 'a' ? 1 : 0,
    );
    const now = Date.parse('2026-11-26T11:00:00.000Z');
    const entries = replayer.next(now) ?? [];
    expect(entries.map((e) => e.id)).toEqual(['e1', 'e2', '']);
    expect(entries.map((e) => e.sentAt)).toEqual([
      Date.parse('2026-11-26T10:00:00.000Z'),
      Date.parse('2026-11-26T10:00:01.000Z'),
      now,
    ]);
    expect(entries.map((e) => e.partition)).toEqual([1, 1, 0]); // a torn line cannot name its account
    expect(replayer.active).toBe(true);
    expect(replayer.next(now)).toBeNull(); // one segment at a time
    for (const e of entries.slice(0, 2)) replayer.confirmed(e);
    expect(segments()).toHaveLength(1);
    replayer.confirmed(entries[2] as (typeof entries)[number]);
    expect(segments()).toHaveLength(0);
    expect(replayer.active).toBe(false);
    expect(replayer.next(now)).toBeNull();
  });

  it('rewind() replays the same segment again from its start (the connection dropped mid-replay)', async () => {
    await appended([body('e1', '2026-11-26T10:00:00.000Z'), body('e2', '2026-11-26T10:00:01.000Z')]);
    spool.sync();
    const replayer = new SpoolReplayer(spool, recordingLogger());
    const first = replayer.next() ?? [];
    replayer.confirmed(first[0] as (typeof first)[number]);
    replayer.rewind();
    expect(replayer.active).toBe(false);
    expect((replayer.next() ?? []).map((e) => e.id)).toEqual(['e1', 'e2']);
  });
});
