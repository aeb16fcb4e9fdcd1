import { describe, expect, it } from 'vitest';
import { OrderedRunner } from './ordered-runner';

const deferred = () => {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
};

describe('OrderedRunner', () => {
  it('runs at most `concurrency` batches and settles them in queue order even when a later one finishes first', async () => {
    const gates = new Map<number, ReturnType<typeof deferred>>();
    const started: number[] = [];
    const settled: number[] = [];
    const runner = new OrderedRunner<number>(2, async (n, previous) => {
      started.push(n);
      const gate = deferred();
      gates.set(n, gate);
      await gate.promise;
      await previous;
      settled.push(n);
    });
    for (const n of [1, 2, 3]) runner.enqueue(n);
    expect(started).toEqual([1, 2]);
    gates.get(2)?.resolve(); // the later batch is done first…
    await new Promise((r) => setTimeout(r, 5));
    expect(settled).toEqual([]); // …but waits for the earlier one
    gates.get(1)?.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(settled).toEqual([1, 2]);
    expect(started).toEqual([1, 2, 3]);
    gates.get(3)?.resolve();
    await runner.drain();
    expect(settled).toEqual([1, 2, 3]);
    expect(runner.busy).toBe(false);
  });

  it('a run that throws does not stop the next one from settling', async () => {
    const settled: number[] = [];
    const runner = new OrderedRunner<number>(1, async (n, previous) => {
      await previous;
      if (n === 1) throw new Error('boom');
      settled.push(n);
    });
    runner.enqueue(1);
    runner.enqueue(2);
    await runner.drain();
    expect(settled).toEqual([2]);
  });

  it('clearQueued forgets batches not started (their deliveries are redelivered)', async () => {
    const ran: number[] = [];
    const gate = deferred();
    const runner = new OrderedRunner<number>(1, async (n) => {
      ran.push(n);
      await gate.promise;
    });
    runner.enqueue(1);
    runner.enqueue(2);
    runner.clearQueued();
    gate.resolve();
    await runner.drain();
    expect(ran).toEqual([1]);
  });
});
