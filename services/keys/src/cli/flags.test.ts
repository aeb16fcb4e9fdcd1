import { createTeamBody, updateKeyBody } from '@tollgate/contracts';
import { describe, expect, it } from 'vitest';
import { UsageError } from './command';
import { allPages, isNone, numberFlag, parseFlagBody } from './flags';

describe('CLI flags read as the API body', () => {
  it('reads none (any case) as clearing, numbers as numbers, anything else as text for the schema', () => {
    expect([isNone(' NONE '), isNone('no')]).toEqual([true, false]);
    expect(numberFlag('none')).toBeNull();
    expect(numberFlag(' 2.5 ')).toBe(2.5);
    expect(numberFlag('12', /^-?\d+$/)).toBe(12);
    expect(numberFlag('2.5', /^-?\d+$/)).toBe('2.5');
    expect(numberFlag('ten')).toBe('ten');
  });

  it("parses with the API's schema and names the flag of a refused field", () => {
    expect(parseFlagBody(createTeamBody, { name: 'eng', limit: 5, limit_reset: 'daily' })).toMatchObject({
      name: 'eng',
      limit: '5',
      limit_reset: 'daily',
    });
    expect(() => parseFlagBody(createTeamBody, { name: 'eng', limit_reset: 'yearly' })).toThrow(
      /^--limit-reset: /,
    );
    expect(() => parseFlagBody(createTeamBody, { name: 'eng', rate_limit_tpm: 'ten' })).toThrow(UsageError);
    expect(() => parseFlagBody(updateKeyBody, { rate_limit_rpm: 0 })).toThrow(/^--rate-limit-rpm: /);
  });

  it('reads every page of a listing served 100 at a time', async () => {
    const items = Array.from({ length: 230 }, (_, i) => i);
    const offsets: number[] = [];
    const all = await allPages(async (offset) => {
      offsets.push(offset);
      return items.slice(offset, offset + 100);
    });
    expect(all).toEqual(items);
    expect(offsets).toEqual([0, 100, 200]);
    expect(await allPages(async () => [])).toEqual([]);
  });
});
