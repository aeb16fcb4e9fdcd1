import { randomUUID } from 'node:crypto';
import { LIMIT_RESETS } from '@tollgate/money';
import { describe, expect, it } from 'vitest';
import { limitReset } from './common';
import { isCanonicalUuid, isUuid, uuid } from './ids';

describe('ids', () => {
  it('accepts a uuid of either case; the canonical form only lowercase', () => {
    const id = randomUUID();
    expect(isUuid(id)).toBe(true);
    expect(isUuid(id.toUpperCase())).toBe(true);
    expect(isCanonicalUuid(id)).toBe(true);
    expect(isCanonicalUuid(id.toUpperCase())).toBe(false);
  });

  it('refuses anything else', () => {
    const id = randomUUID();
    for (const bad of [
      undefined,
      null,
      42,
      '',
      `${id}0`,
      ` ${id}`,
      id.replaceAll('-', ''),
      `${id.slice(0, -1)}g`,
    ]) {
      expect(isUuid(bad), String(bad)).toBe(false);
      expect(isCanonicalUuid(bad), String(bad)).toBe(false);
    }
  });
});

describe('spend periods', () => {
  it('the contracts accept exactly the periods money computes', () => {
    expect(limitReset.options).toEqual([...LIMIT_RESETS]);
    expect(limitReset.safeParse('yearly').success).toBe(false);
  });
});

describe('one refusal of a malformed id', () => {
  it('a contract field accepts a uuid of either case and names what it wanted', () => {
    const id = randomUUID();
    const field = uuid('a team id');
    expect(field.parse(id.toUpperCase())).toBe(id.toUpperCase());
    const bad = field.safeParse('team-1');
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toBe('must be a team id (uuid)');
    expect(field.safeParse(42).error?.issues[0]?.message).toBe('must be a team id (uuid)');
  });
});
