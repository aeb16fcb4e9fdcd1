import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo';

describe('Fifo', () => {
  it('returns items in insertion order across compactions', () => {
    const q = new Fifo<number>();
    for (let i = 0; i < 5000; i++) q.push(i);
    const out: number[] = [];
    for (let i = 0; i < 3000; i++) out.push(q.shift() as number);
    for (let i = 5000; i < 6000; i++) q.push(i);
    while (q.length > 0) out.push(q.shift() as number);
    expect(out).toEqual(Array.from({ length: 6000 }, (_, i) => i));
    expect(q.shift()).toBeUndefined();
  });

  it('prepends requeued items before the queued ones', () => {
    const q = new Fifo<string>();
    q.push('c');
    q.push('d');
    q.shift();
    q.prepend(['a', 'b']);
    expect(q.toArray()).toEqual(['a', 'b', 'd']);
    expect(q.peek()).toBe('a');
    expect(q.length).toBe(3);
  });
});
