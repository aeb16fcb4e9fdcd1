import { describe, expect, it } from 'vitest';
import { usageEvent } from '../../test/testing';
import { compareIds, distinctEvents } from './distinct-events';

describe('distinctEvents (the one de-duplication by id of a batch)', () => {
  it('keeps the first occurrence of each id, in id order', () => {
    const a = usageEvent({ id: 'gen-1-bbbbbbbbbbbbbbbbbbbb', cost: '1' });
    const b = usageEvent({ id: 'gen-1-aaaaaaaaaaaaaaaaaaaa', cost: '2' });
    const aAgain = { ...a, cost: '9' };
    expect(distinctEvents([a, b, aAgain]).map((e) => [e.id, e.cost])).toEqual([
      ['gen-1-aaaaaaaaaaaaaaaaaaaa', '2'],
      ['gen-1-bbbbbbbbbbbbbbbbbbbb', '1'],
    ]);
    expect(distinctEvents([])).toEqual([]);
  });

  it('orders ids by code unit (as Postgres C collation), not by locale', () => {
    expect(['gen-b', 'gen-B', 'gen-a'].sort(compareIds)).toEqual(['gen-B', 'gen-a', 'gen-b']);
  });
});
