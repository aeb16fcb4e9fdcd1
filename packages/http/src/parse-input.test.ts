import { accountParams, parseId, uuid } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseInput } from './index';

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
});
