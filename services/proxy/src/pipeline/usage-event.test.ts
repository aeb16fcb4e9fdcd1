import { describe, expect, it } from 'vitest';
import { gatewayOverheadUs } from './usage-event';

// performance.now() marks in ms: arrival at 1000, provider held from 1002.5 to 1500, now 1501.25.
const marks = { receivedAt: 1000, upstreamStartedAt: 1002.5, upstreamEndedAt: 1500 };

describe('gateway overhead', () => {
  it('is the time in the proxy minus the time waiting on providers, in µs', () => {
    // Before the provider: 2.5 ms; after its answer ended: 1.25 ms.
    expect(gatewayOverheadUs(marks, 1501.25)).toBe(3750);
  });

  it('counts no provider time past now when the answer has not ended (cancelled, timed out)', () => {
    expect(gatewayOverheadUs({ ...marks, upstreamEndedAt: 0 }, 1400)).toBe(2500);
  });

  it('is absent when a mark is missing, and never negative', () => {
    expect(gatewayOverheadUs({ ...marks, receivedAt: 0 }, 1501)).toBeUndefined();
    expect(gatewayOverheadUs({ ...marks, upstreamStartedAt: 0 }, 1501)).toBeUndefined();
    // Clock marks taken in a different order than expected cannot make it negative.
    expect(
      gatewayOverheadUs({ receivedAt: 1003, upstreamStartedAt: 1002, upstreamEndedAt: 1500 }, 1500),
    ).toBe(0);
  });
});
