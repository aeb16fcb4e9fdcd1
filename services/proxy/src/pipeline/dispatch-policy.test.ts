import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { wireFormatOf } from '../providers';
import { REQUEST_TOO_LARGE } from '../providers/provider-error';
import type { ClassifiedHttpError, ProviderFailure } from '../providers/wire-format';
import { failoverDecision } from './dispatch';

/**
 * The failover policy of dispatch (issue 24: adapters say what happened, dispatch alone decides what
 * follows), over each failure an adapter can report, and end to end from the adapters' own readings.
 */
const refused = (failure: ProviderFailure, reason?: string): ClassifiedHttpError => ({
  failure,
  summary: new AppError('provider_error', 'x', reason ? { reason } : {}, 502),
  detail: null,
});

describe('failoverDecision', () => {
  it('answers the caller’s own mistake as it is: no failover, the key and the provider unharmed', () => {
    expect(failoverDecision(refused('caller'))).toEqual({
      failover: false,
      restKey: false,
      providerFault: false,
    });
  });

  it('fails over and rests the key for a rejected, unpaid or rate-limited key', () => {
    for (const f of ['credentials', 'rate_limited'] as const) {
      expect(failoverDecision(refused(f))).toEqual({ failover: true, restKey: true, providerFault: true });
    }
  });

  it('fails over without resting the key when the provider cannot serve', () => {
    expect(failoverDecision(refused('unavailable'))).toEqual({
      failover: true,
      restKey: false,
      providerFault: true,
    });
  });

  it('fails over from a "request too large" 429 but blames neither the key nor the provider', () => {
    expect(failoverDecision(refused('rate_limited', REQUEST_TOO_LARGE))).toEqual({
      failover: true,
      restKey: false,
      providerFault: false,
    });
  });

  it('decides for each adapter as the status rules of issue 8 say', () => {
    const openai = wireFormatOf('openai');
    const decide = (status: number, body = '') =>
      failoverDecision(openai.classifyHttpError(status, body, 'p'));
    for (const s of [401, 402, 403, 429]) expect(decide(s)).toMatchObject({ failover: true, restKey: true });
    for (const s of [408, 409, 500, 502, 503, 529]) {
      expect(decide(s)).toMatchObject({ failover: true, restKey: false });
    }
    for (const s of [400, 404, 413, 422])
      expect(decide(s)).toMatchObject({ failover: false, restKey: false });
    const tooLarge = decide(429, '{"error":{"message":"Request too large for gpt on tokens per min"}}');
    expect(tooLarge).toEqual({ failover: true, restKey: false, providerFault: false });
    const anthropic = wireFormatOf('anthropic');
    const billing = '{"type":"error","error":{"type":"billing_error","message":"low"}}';
    expect(failoverDecision(anthropic.classifyHttpError(400, billing, 'a'))).toMatchObject({
      failover: true,
      restKey: true,
    });
    expect(failoverDecision(anthropic.classifyHttpError(529, '', 'a'))).toMatchObject({
      failover: true,
      restKey: false,
    });
  });
});
