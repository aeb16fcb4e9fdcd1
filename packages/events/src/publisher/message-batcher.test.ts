import { afterEach, describe, expect, it, vi } from 'vitest';
import { Fifo } from '../fifo';
import { USAGE_BATCH_MESSAGE_TYPE } from '../usage-event';
import type { Entry } from './confirm-window';
import { encodeMessage, SendScheduler, takeMessage, USAGE_MESSAGE_TYPE } from './message-batcher';

const entry = (id: string, bytes = 10, sentAt = 0): Entry => ({
  id,
  body: Buffer.alloc(bytes, 'x'),
  timestamp: 7,
  sentAt,
  confirmed: false,
  dropped: false,
  partition: 0,
});
const laneOf = (entries: Entry[]) => {
  const lane = new Fifo<Entry>();
  for (const e of entries) lane.push(e);
  return lane;
};

describe('takeMessage', () => {
  it('takes at most eventsPerMessage, at most the room left, oldest first', () => {
    const lane = laneOf(['a', 'b', 'c', 'd', 'e'].map((id) => entry(id)));
    const limits = { eventsPerMessage: 3, maxMessageBytes: 1_000 };
    expect(takeMessage(lane, limits, 10).map((e) => e.id)).toEqual(['a', 'b', 'c']);
    expect(takeMessage(lane, limits, 1).map((e) => e.id)).toEqual(['d']);
    expect(lane.length).toBe(1);
  });

  it('closes a message before maxMessageBytes (newline included), but a lone large event still goes', () => {
    const lane = laneOf([entry('big', 500), entry('a', 40), entry('b', 40), entry('c', 40)]);
    const limits = { eventsPerMessage: 100, maxMessageBytes: 100 };
    expect(takeMessage(lane, limits, 100).map((e) => e.id)).toEqual(['big']);
    expect(takeMessage(lane, limits, 100).map((e) => e.id)).toEqual(['a', 'b']); // 41 + 41; +41 > 100
    expect(takeMessage(lane, limits, 100).map((e) => e.id)).toEqual(['c']);
  });
});

describe('encodeMessage', () => {
  it('one event keeps the plain usage.v1 shape', () => {
    const m = encodeMessage([entry('a', 5, 42)]);
    expect(m).toMatchObject({ type: USAGE_MESSAGE_TYPE, contentType: 'application/json', messageId: 'a' });
    expect(m.body.toString()).toBe('xxxxx');
    expect(m.sentAt).toBe(42);
  });

  it('several events become NDJSON usage.batch.v1, signed with the oldest hand-over time', () => {
    const m = encodeMessage([entry('a', 2, 30), entry('b', 2, 10), entry('c', 2, 20)]);
    expect(m).toMatchObject({ type: USAGE_BATCH_MESSAGE_TYPE, contentType: 'application/x-ndjson' });
    expect(m.body.toString()).toBe('xx\nxx\nxx');
    expect(m).toMatchObject({ messageId: 'a', timestamp: 7, sentAt: 10 });
  });
});

describe('SendScheduler', () => {
  afterEach(() => vi.useRealTimers());

  it('lingers lingerMs for company, sends at once when a message is full, never twice per turn', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    const send = vi.fn();
    const s = new SendScheduler(5, 3, () => true, send);
    s.linger(1, 0);
    s.linger(2, 1); // 1 ms into the linger: waits for more company
    await vi.advanceTimersByTimeAsync(4);
    expect(send).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(5); // the linger timer fired: sent on the turn after
    expect(send).toHaveBeenCalledTimes(1);
    s.linger(3, 100); // a message's worth: next turn
    s.soon();
    await vi.advanceTimersByTimeAsync(1);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it('lingerMs 0 sends every turn; nothing is scheduled while the channel cannot take messages', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    let open = false;
    const send = vi.fn();
    const s = new SendScheduler(0, 100, () => open, send);
    s.linger(1, 0);
    await vi.advanceTimersByTimeAsync(10);
    expect(send).not.toHaveBeenCalled();
    open = true;
    s.linger(1, 10);
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(1);
  });

  it('a confirm inside a linger keeps the linger; one with nothing lingering sends what the window held back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    const send = vi.fn();
    const s = new SendScheduler(5, 100, () => true, send);
    s.linger(1, 0); // an event lingers for company (timer: 5 ms)
    await vi.advanceTimersByTimeAsync(2);
    s.roomFreed(1); // an earlier message's confirm 2 ms in
    await vi.advanceTimersByTimeAsync(1);
    expect(send).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(3); // the linger ran out: sent
    expect(send).toHaveBeenCalledTimes(1);
    s.roomFreed(0); // nothing waiting: nothing to send
    await vi.advanceTimersByTimeAsync(10);
    expect(send).toHaveBeenCalledTimes(1);
    s.roomFreed(4); // events the full window held back (their linger is over): next turn
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(2);
  });

  it('the last event the linger would take sends what waits on its turn, without the timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate'] });
    const send = vi.fn();
    const s = new SendScheduler(5, 100, () => true, send);
    s.linger(1, 1_000); // the first event: the linger timer armed
    s.linger(2, 1_001.5); // 1.5 ms in, 1.5 ms after the one before: another is due within the linger
    await vi.advanceTimersByTimeAsync(0);
    expect(send).not.toHaveBeenCalled();
    s.linger(3, 1_003); // 3 ms in: the next, 1.5 ms later, would still come in time (4.5 < 5)
    await vi.advanceTimersByTimeAsync(0);
    expect(send).not.toHaveBeenCalled();
    s.linger(4, 1_004.5); // 4.5 ms in: the next would come after the timer (6 ≥ 5): all four go on this turn
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(10); // the linger timer was cleared: no second send
    expect(send).toHaveBeenCalledTimes(1);
    s.linger(1, 1_020); // a new linger from its own first event, 15.5 ms after the last
    await vi.advanceTimersByTimeAsync(0);
    expect(send).toHaveBeenCalledTimes(1);
    s.linger(2, 1_021); // 1 ms in, 1 ms apart: waits for more
    await vi.advanceTimersByTimeAsync(4);
    expect(send).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2); // no more came: the timer sent them (5 ms after the first)
    expect(send).toHaveBeenCalledTimes(2);
  });
});
