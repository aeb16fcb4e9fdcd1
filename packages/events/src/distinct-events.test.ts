import { describe, expect, it } from 'vitest';
import { compareIds, distinctEvents } from './distinct-events';

const a = { id: 'gen-1-bbbbbbbbbbbbbbbbbbbb', cost: '1' };
const b = { id: 'gen-1-aaaaaaaaaaaaaaaaaaaa', cost: '2' };
const aAgain = { ...a, cost: '9' };

describe('distinctEvents (the one de-duplication of usage events by id)', () => {
  it('keeps the first occurrence of each id, in the order given', () => {
    expect(distinctEvents([a, b, aAgain]).map((e) => [e.id, e.cost])).toEqual([
      ['gen-1-bbbbbbbbbbbbbbbbbbbb', '1'],
      ['gen-1-aaaaaaaaaaaaaaaaaaaa', '2'],
    ]);
    expect(distinctEvents([])).toEqual([]);
  });

  it('keeps the first occurrence of each id, in id order, for a lock order', () => {
    expect(distinctEvents([a, b, aAgain], 'id').map((e) => [e.id, e.cost])).toEqual([
      ['gen-1-aaaaaaaaaaaaaaaaaaaa', '2'],
      ['gen-1-bbbbbbbbbbbbbbbbbbbb', '1'],
    ]);
  });

  it('leaves the batch it is given as it was', () => {
    const batch = [a, b, aAgain];
    distinctEvents(batch, 'id');
    expect(batch).toEqual([a, b, aAgain]);
  });

  it('orders ids by code unit (as Postgres C collation), not by locale', () => {
    expect(['gen-b', 'gen-B', 'gen-a'].sort(compareIds)).toEqual(['gen-B', 'gen-a', 'gen-b']);
  });
});
