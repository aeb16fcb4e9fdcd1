import { describe, expect, it } from 'vitest';
import { KeyRing, ProviderHealth } from './health';

describe('ProviderHealth (circuit breaker)', () => {
  it('opens after consecutive failures, lets one probe through after the cooldown, closes on success', () => {
    let now = 0;
    const h = new ProviderHealth(3, 1_000, () => now);
    h.failure('p');
    h.failure('p');
    expect(h.available('p')).toBe(true); // 2 < 3
    h.failure('p');
    expect(h.available('p')).toBe(false);
    expect(h.open()).toEqual(['p']);
    now = 1_000;
    expect(h.available('p')).toBe(true); // half-open
    h.attempting('p');
    expect(h.available('p')).toBe(false); // one probe at a time
    h.failure('p');
    expect(h.available('p')).toBe(false); // reopened
    now = 2_000;
    h.attempting('p');
    h.success('p');
    expect(h.available('p')).toBe(true);
    expect(h.open()).toEqual([]);
  });
  it('an inconclusive attempt ends a half-open probe without a verdict', () => {
    let t = 0;
    const h = new ProviderHealth(2, 1000, () => t);
    h.failure('p');
    h.failure('p');
    t = 1000;
    h.attempting('p'); // the probe
    expect(h.available('p')).toBe(false);
    h.inconclusive('p'); // e.g. a "Request too large" 429: says nothing about the provider
    expect(h.available('p')).toBe(true);
    expect(h.open()).toEqual([]);
  });

  it('a success resets the count of consecutive failures', () => {
    const h = new ProviderHealth(2, 1_000, () => 0);
    h.failure('p');
    h.success('p');
    h.failure('p');
    expect(h.available('p')).toBe(true);
  });
});

describe('KeyRing', () => {
  it('spreads requests over the keys and skips a rejected one until its cooldown ends', () => {
    let now = 0;
    const ring = new KeyRing(1_000, () => now);
    const keys = ['a', 'b', 'c'];
    expect([ring.pick('p', keys), ring.pick('p', keys), ring.pick('p', keys), ring.pick('p', keys)]).toEqual([
      'a',
      'b',
      'c',
      'a',
    ]);
    ring.reject('b');
    expect([ring.pick('p', keys), ring.pick('p', keys), ring.pick('p', keys)]).toEqual(['c', 'a', 'c']);
    now = 1_001;
    expect(ring.pick('p', keys)).toBe('a');
    expect(ring.pick('p', keys)).toBe('b');
    expect(ring.pick('p', ['only'])).toBe('only');
    expect(ring.pick('p', [])).toBeUndefined();
  });
  it('uses a cooling key when every key is cooling, but never one excluded for this request', () => {
    const ring = new KeyRing(1_000, () => 0);
    ring.reject('a');
    ring.reject('b');
    expect(['a', 'b']).toContain(ring.pick('p', ['a', 'b']));
    expect(ring.pick('p', ['a', 'b'], new Set(['a']))).toBe('b');
  });
});
