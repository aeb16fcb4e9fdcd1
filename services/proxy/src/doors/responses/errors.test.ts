import { AppError, badRequest } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { responsesErrorBody } from './errors';

describe('responsesErrorBody (OpenAI error shape)', () => {
  it('names the field of a 400 as param', () => {
    expect(responsesErrorBody(badRequest('input.0.role: expected a role'))).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message: 'input.0.role: expected a role',
          type: 'invalid_request_error',
          param: 'input.0.role',
          metadata: { error_type: 'bad_request' },
        },
      },
    });
    expect(responsesErrorBody(badRequest('store: no', { field: 'store' })).body.error).toMatchObject({
      param: 'store',
    });
  });

  it('answers a key out of money as insufficient_quota with its status', () => {
    const r = responsesErrorBody(
      new AppError('payment_required', 'Insufficient credits', { credits_remaining: 0 }),
    );
    expect(r.status).toBe(402);
    expect(r.body.error).toMatchObject({
      type: 'insufficient_quota',
      code: 402,
      param: null,
    });
    const relayed = new AppError('provider_error', 'The provider refused the request', {}, 400);
    expect(responsesErrorBody(relayed).body.error).toMatchObject({
      code: 400,
      type: 'invalid_request_error',
    });
    expect(responsesErrorBody(new AppError('provider_error', 'down')).body.error).toMatchObject({
      code: 502,
      type: 'server_error',
    });
    expect(responsesErrorBody(new AppError('rate_limited', 'slow down')).body.error).toMatchObject({
      type: 'rate_limit_error',
      code: 429,
    });
  });
});
