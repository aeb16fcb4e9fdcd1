import { describe, expect, it } from 'vitest';
import { UnknownKeyLimiter } from './unknown-keys';

describe('UnknownKeyLimiter', () => {
  it('limits each address per minute, apart from the others', () => {
    let t = 0;
    const l = new UnknownKeyLimiter({ perMinute: 2 }, () => t);
    l.recordUnknown('a');
    l.recordUnknown('a');
    expect(l.blocked('a')).toBe('address');
    expect(l.blocked('b')).toBeNull();
    t = 60_000;
    expect(l.blocked('a')).toBeNull();
  });

  it('bounds all addresses together with a token bucket that refills at perSecond', () => {
    let t = 0;
    const l = new UnknownKeyLimiter({ perMinute: 0, perSecond: 2, burst: 3 }, () => t);
    for (const c of ['a', 'b', 'c']) {
      expect(l.blocked(c)).toBeNull();
      l.recordUnknown(c);
    }
    expect(l.blocked('d')).toBe('global');
    t = 499;
    expect(l.blocked('d')).toBe('global');
    t = 500; // one token back
    expect(l.blocked('d')).toBeNull();
    l.recordUnknown('d');
    expect(l.blocked('e')).toBe('global');
    t = 60_000; // never more than the burst
    for (let i = 0; i < 3; i++) l.recordUnknown(`x${i}`);
    expect(l.blocked('y')).toBe('global');
  });

  it('charges lookups that were in flight when the bucket emptied to the next ones (no lift by concurrency)', () => {
    let t = 0;
    const l = new UnknownKeyLimiter({ perMinute: 0, perSecond: 1, burst: 2 }, () => t);
    for (let i = 0; i < 4; i++) l.recordUnknown('a'); // 2 tokens, 2 in debt
    t = 2_000; // 2 tokens refilled: still none available
    expect(l.blocked('b')).toBe('global');
    t = 3_000;
    expect(l.blocked('b')).toBeNull();
  });
});
