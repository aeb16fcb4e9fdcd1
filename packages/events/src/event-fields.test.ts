import { describe, expect, it } from 'vitest';
import { type Field, f } from './event-fields';

/** Values of every JSON kind and the edge cases the builders care about. */
const values: unknown[] = [
  null,
  true,
  false,
  0,
  1,
  -1,
  1.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  '',
  'a',
  'x'.repeat(65),
  'nul\u0000',
  'lone \ud83d',
  'pair 😀',
  'usage',
  '1',
  '0.0001',
  '1.',
  '6f1c1f8e-5a1b-4c1e-9a4e-2f7b8c9d0e1f',
  '6F1C1F8E-5A1B-4C1E-9A4E-2F7B8C9D0E1F',
  '2026-11-21T00:51:42.307Z',
  '2026-11-21T00:51:42+01:00',
  '2026-11-21',
  [],
  ['a'],
  [''],
  Array.from({ length: 33 }, () => 'a'),
  {},
  { a: 1 },
  { a: 1, b: 'x' },
  { a: 1, extra: true },
  { a: 'nul\u0000' },
  { a: null },
];

const builders: Record<string, Field> = {
  literal: f.literal('usage'),
  'literal number': f.literal(1),
  pattern: f.pattern(/^\d+(\.\d+)?$/),
  uuid: f.uuid(),
  datetime: f.datetime(),
  text: f.text(),
  'text(1)': f.text(1),
  'text(1, 64)': f.text(1, 64),
  count: f.count(),
  int: f.int(),
  boolean: f.boolean(),
  oneOf: f.oneOf(['a', 'usage']),
  nullable: f.nullable(f.text()),
  array: f.array(f.text(1), 32),
  object: f.object({ a: f.count(), b: f.optional(f.text()) }),
  'object of nullable': f.object({ a: f.nullable(f.count()) }),
};

describe('event fields: one declaration, zod and the fast check', () => {
  for (const [name, field] of Object.entries(builders)) {
    it(`${name}: plain holds only for values zod accepts and returns unchanged`, () => {
      let plain = 0;
      for (const value of values) {
        if (!field.plain(value)) continue;
        plain++;
        const parsed = field.zod.safeParse(structuredClone(value));
        expect(parsed.success, `${name} ${JSON.stringify(value)}`).toBe(true);
        expect(parsed.data, `${name} ${JSON.stringify(value)}`).toEqual(value);
      }
      expect(plain, `${name} accepts something`).toBeGreaterThan(0);
    });
  }

  it('plain refuses text zod would repair, keys zod would strip, and absent required fields', () => {
    expect(f.text().plain('nul\u0000')).toBe(false);
    expect(f.text().zod.parse('nul\u0000')).toBe('nul');
    const obj = f.object({ a: f.count(), b: f.optional(f.count()) });
    expect(obj.plain({ a: 1, c: 2 })).toBe(false);
    expect(obj.zod.parse({ a: 1, c: 2 })).toEqual({ a: 1 });
    expect(obj.plain({ b: 1 })).toBe(false);
    expect(obj.plain({ a: 1 })).toBe(true);
  });
});
