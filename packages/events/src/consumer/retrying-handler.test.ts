import { describe, expect, it } from 'vitest';
import { recordingLogger, sampleEvent } from '../test-support';
import { RetryingHandler } from './retrying-handler';

class Transient extends Error {}

const make = (handle: () => Promise<{ rejected: Map<string, string> } | undefined>) => {
  const counters = { failedBatches: 0, transientRetries: 0 };
  const handler = new RetryingHandler({
    handle,
    classify: (err) => (err instanceof Transient ? 'transient' : 'permanent'),
    retry: { initialMs: 1, maxMs: 5 },
    log: recordingLogger(),
    counters,
  });
  return { handler, counters };
};

describe('RetryingHandler', () => {
  it('retries transient failures until handle succeeds, returning what it refused', async () => {
    let calls = 0;
    const refused = new Map([['x', 'no']]);
    const { handler, counters } = make(async () => {
      if (++calls < 4) throw new Transient('db down');
      return { rejected: refused };
    });
    expect(await handler.attempt([sampleEvent()], 1, () => false)).toBe(refused);
    expect(counters).toEqual({ failedBatches: 3, transientRetries: 3 });
  });

  it('gives up after maxPermanent permanent failures (false)', async () => {
    let calls = 0;
    const { handler } = make(async () => {
      calls++;
      throw new Error('poison');
    });
    expect(await handler.attempt([sampleEvent()], 3, () => false)).toBe(false);
    expect(calls).toBe(3);
  });

  it('returns null when the batch was abandoned during a backoff, and stop() cuts backoffs short', async () => {
    const { handler } = make(async () => {
      throw new Transient('db down');
    });
    let abandoned = false;
    const pending = handler.attempt([sampleEvent()], 1, () => abandoned);
    abandoned = true;
    handler.stop();
    expect(await pending).toBeNull();
  });
});
