import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expectContract } from './contract';

const schema = z.object({ data: z.object({ id: z.string(), rows: z.array(z.object({ n: z.number() })) }) });

describe('expectContract', () => {
  it('accepts an answer the schema describes exactly', () => {
    expect(() => expectContract(schema, { data: { id: 'a', rows: [{ n: 1 }] } })).not.toThrow();
  });

  it('fails on a mismatch, on an undeclared field (nested too) and on a transforming schema', () => {
    expect(() => expectContract(schema, { data: { id: 1, rows: [] } })).toThrow(/does not match/);
    expect(() => expectContract(schema, { data: { id: 'a', rows: [], extra: 1 } })).toThrow(/data\.extra/);
    expect(() => expectContract(schema, { data: { id: 'a', rows: [{ n: 1, m: 2 }] } })).toThrow(
      /data\.rows\[0\]\.m/,
    );
    const transforming = z.object({ n: z.string().transform((s) => s.length) });
    expect(() => expectContract(transforming, { n: 'abc' })).toThrow(/transforms/);
  });
});
