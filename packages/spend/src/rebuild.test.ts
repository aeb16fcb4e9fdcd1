import { createServiceSigner, generateServiceKeyPair } from '@tollgate/auth';
import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { billingRebuild, sharedRebuild } from './rebuild';

describe('sharedRebuild', () => {
  it('runs one rebuild per (account, key) at a time; concurrent callers share it, later ones start anew', async () => {
    const started: string[] = [];
    let finish: () => void = () => {};
    const rebuild = sharedRebuild(async (accountId, keyId) => {
      started.push(`${accountId}/${keyId}`);
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
    });
    const at = new Date();
    const a = rebuild('a1', 'k1', at);
    const b = rebuild('a1', 'k1', at);
    const other = rebuild('a1', null, at);
    expect(a).toBe(b);
    expect(other).not.toBe(a);
    expect(started).toEqual(['a1/k1', 'a1/null']);
    finish();
    await other;
    started.length = 0;
    const c = rebuild('a1', null, at);
    expect(started).toEqual(['a1/null']);
    finish();
    await c;
  });

  it('shares a failure with every waiting caller, then tries again on the next call', async () => {
    let calls = 0;
    const rebuild = sharedRebuild(async () => {
      calls++;
      throw new Error('down');
    });
    const at = new Date();
    const results = await Promise.allSettled([rebuild('a', 'k', at), rebuild('a', 'k', at)]);
    expect(results.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    await expect(rebuild('a', 'k', at)).rejects.toThrow('down');
    expect(calls).toBe(2);
  });
});

describe('billingRebuild', () => {
  it('refuses with 503 service_unavailable when billing cannot be reached', async () => {
    const signer = createServiceSigner('proxy', generateServiceKeyPair().privateKey);
    const rebuild = billingRebuild({ billingUrl: 'http://127.0.0.1:1/', signer, timeoutMs: 1_000 });
    const err = await rebuild('a', null, new Date()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).type).toBe('service_unavailable');
    expect((err as AppError).status).toBe(503);
  });
});
