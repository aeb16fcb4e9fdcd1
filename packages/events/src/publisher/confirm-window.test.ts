import { describe, expect, it } from 'vitest';
import { ConfirmWindow, type Entry, PendingLanes } from './confirm-window';

let seq = 0;
const entry = (partition = 0, sentAt = ++seq): Entry => ({
  id: `e${sentAt}`,
  body: Buffer.from(`{"n":${sentAt}}`),
  timestamp: 0,
  sentAt,
  confirmed: false,
  dropped: false,
  partition,
});
const ids = (entries: readonly Entry[]) => entries.map((e) => e.id);

describe('PendingLanes', () => {
  it('keeps one FIFO per partition and hands lanes out round robin, skipping empty ones', () => {
    const lanes = new PendingLanes(3);
    const [a, b, c, d] = [entry(0), entry(2), entry(0), entry(2)];
    for (const e of [a, b, c, d]) lanes.push(e as Entry);
    expect(lanes.length).toBe(4);
    const first = lanes.nextLane();
    const second = lanes.nextLane();
    expect(first?.toArray()).toEqual([a, c]);
    expect(second?.toArray()).toEqual([b, d]);
    expect(lanes.nextLane()).toBe(first); // lane 1 is empty: skipped
    first?.shift();
    lanes.taken(1);
    expect(lanes.length).toBe(3);
  });

  it('prepends requeued entries before the pending ones, each lane in its order', () => {
    const lanes = new PendingLanes(2);
    const later = [entry(0), entry(1)];
    for (const e of later) lanes.push(e);
    const back = [entry(0), entry(1), entry(0)];
    lanes.prepend(back);
    expect(ids(lanes.toArray())).toEqual(ids([back[0], back[2], later[0], back[1], later[1]] as Entry[]));
    expect(lanes.length).toBe(5);
  });

  it('shiftOldest takes the oldest head across lanes', () => {
    const lanes = new PendingLanes(2);
    const young = entry(0, 50);
    const old = entry(1, 10);
    lanes.push(young);
    lanes.push(old);
    expect(lanes.shiftOldest()).toBe(old);
    expect(lanes.shiftOldest()).toBe(young);
    expect(lanes.shiftOldest()).toBeUndefined();
    expect(lanes.length).toBe(0);
  });

  it('with one partition it is a plain FIFO', () => {
    const lanes = new PendingLanes(1);
    const all = [entry(), entry(), entry()];
    for (const e of all) lanes.push(e);
    expect(lanes.nextLane()?.toArray()).toEqual(all);
  });
});

describe('ConfirmWindow', () => {
  it('counts room, and a confirm frees its entries once (a second confirm of them is a no-op)', () => {
    const w = new ConfirmWindow(3);
    const sent = [entry(), entry()];
    w.buffered = 2;
    w.sent(sent);
    expect(w.room()).toBe(1);
    const seen: Entry[] = [];
    expect(w.confirm(sent, (e) => seen.push(e))).toBe(2);
    expect(w.confirm(sent, (e) => seen.push(e))).toBe(0);
    expect(seen).toEqual(sent);
    expect(w.room()).toBe(3);
    expect(w.buffered).toBe(0);
  });

  it('a lost channel puts every unconfirmed entry back before the pending ones, in send order', () => {
    const w = new ConfirmWindow(10);
    const [a, b, c, d] = [entry(), entry(), entry(), entry()];
    w.sent([a, b, c] as Entry[]);
    w.confirm([b as Entry], () => {});
    w.pending.push(d as Entry);
    w.requeueUnconfirmed();
    expect(w.open).toBe(0);
    expect(w.pending.toArray()).toEqual([a, c, d]);
  });

  it('dropOldest drops a pending entry first, else marks the oldest open one on the wire as dropped', () => {
    const w = new ConfirmWindow(10);
    const [wire, pending] = [entry(), entry()];
    w.buffered = 2;
    w.sent([wire as Entry]);
    w.pending.push(pending as Entry);
    expect(w.dropOldest()).toBe(true);
    expect(w.pending.length).toBe(0);
    expect(w.dropOldest()).toBe(true);
    expect(wire?.dropped).toBe(true);
    expect(w.open).toBe(0);
    expect(w.buffered).toBe(0);
    expect(w.dropOldest()).toBe(false);
    // A dropped entry's late confirm is not counted as published.
    expect(w.confirm([wire as Entry], () => {})).toBe(0);
  });
});
