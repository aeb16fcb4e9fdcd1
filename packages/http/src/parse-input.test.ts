import { randomUUID } from 'node:crypto';
import { accountParams, uuid } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseId, parseInput } from './index';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.toEnvelope();
    throw err;
  }
  throw new Error('expected a 400');
};

describe('parseInput', () => {
  it('names the field in the message and in metadata.field', () => {
    const schema = z.strictObject({ limit: z.number({ error: 'expected a number' }) });
    expect(refusal(() => parseInput(schema, { limit: 'x' }))).toEqual({
      error: {
        code: 400,
        message: 'limit: expected a number',
        metadata: { error_type: 'bad_request', field: 'limit' },
      },
    });
  });

  it("refuses a malformed id of a contract exactly as parseId refuses a path parameter's", () => {
    const byContract = refusal(() => parseInput(z.object({ id: uuid('a team id') }), { id: 'team-1' }));
    const byHand = refusal(() => parseId('team-1', 'id', 'a team id'));
    expect(byContract).toEqual(byHand);
    expect(refusal(() => parseInput(accountParams, { accountId: 'acme' })).error).toMatchObject({
      message: 'accountId: must be an account id (uuid)',
      metadata: { field: 'accountId' },
    });
  });

  it('a path parameter read by hand is lowercased, or the 400 naming the field', () => {
    const id = randomUUID();
    expect(parseId(id.toUpperCase(), 'id', 'a team id')).toBe(id);
    for (const bad of [undefined, '', 'team-1', `${id}0`]) {
      expect(refusal(() => parseId(bad, 'hash', 'a key id'))).toEqual({
        error: {
          code: 400,
          message: 'hash: must be a key id (uuid)',
          metadata: { error_type: 'bad_request', field: 'hash' },
        },
      });
    }
  });
});
