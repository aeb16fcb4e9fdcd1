import { describe, expect, it } from 'vitest';
import { newRequestId, REQUEST_ID_PATTERN, requestIdSource } from './index';

describe('request ids', () => {
  it('newRequestId and requestIdSource produce the same format, with the given time', () => {
    const next = requestIdSource(4);
    for (const id of [newRequestId(1_800_000_000_123), next(1_800_000_000_123)]) {
      expect(id).toMatch(REQUEST_ID_PATTERN);
      expect(id.startsWith('gen-1800000000-')).toBe(true);
    }
  });

  it('never repeats across pool refills', () => {
    const next = requestIdSource(8);
    const ids = new Set(Array.from({ length: 10_000 }, () => next()));
    expect(ids.size).toBe(10_000);
    for (const id of ids) expect(id).toMatch(REQUEST_ID_PATTERN);
  });
});
