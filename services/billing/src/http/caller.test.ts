import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { devServiceSigner, devServiceVerifier } from '@tollgate/auth';
import type { KeyOwner } from '@tollgate/contracts';
import { badRequest } from '@tollgate/errors';
import { closeServer, errorHandler } from '@tollgate/http';
import { createLogger } from '@tollgate/logger';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyOwners } from '../keys/key-owners';
import { keyCallerRead } from './caller';

/**
 * `keyCallerRead`: the route's read runs while the key is re-read, and what it found (or threw)
 * reaches the client only for a key `keyCaller` would confirm. Load-independent: the owner answers
 * only when the test lets it, after checking the read has already started.
 */
describe('keyCallerRead: the read overlaps the key check, the answer waits for it', () => {
  const keys = new Map<string, KeyOwner>();
  /** Owner reads in flight: the test answers each (calls it) when it chooses. */
  const pending: Array<() => void> = [];
  const owners: KeyOwners = {
    accountsOf: async () => new Map(),
    read: (id) =>
      new Promise((resolve) => {
        pending.push(() => resolve(keys.get(id) ?? null));
      }),
    current: async () => [],
    close: async () => {},
  };
  const reads: string[] = [];
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const app = express();
    app.get(
      '/thing',
      keyCallerRead(
        { verifier: devServiceVerifier('billing'), owners },
        'inference',
        async (req, caller) => {
          reads.push(caller.keyId);
          if (req.query.bad === '1') throw badRequest('id: not a generation id');
          return { secret: `figures of ${caller.accountId}` };
        },
        (res, value) => {
          res.json({ data: value });
        },
      ),
    );
    // A read that throws before returning its promise: the same rules.
    app.get(
      '/sync',
      keyCallerRead(
        { verifier: devServiceVerifier('billing'), owners },
        'inference',
        (_req, caller) => {
          reads.push(caller.keyId);
          throw badRequest('id: thrown at once');
        },
        (res, value) => {
          res.json({ data: value });
        },
      ),
    );
    app.use(errorHandler(createLogger({ name: 'billing-test', level: 'silent' })));
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await closeServer(server);
  });

  const key = (over: Partial<KeyOwner> = {}): KeyOwner => {
    const k: KeyOwner = {
      id: randomUUID(),
      accountId: randomUUID(),
      scope: 'inference',
      disabled: false,
      revoked: false,
      expiresAt: null,
      limit: null,
      limitReset: null,
      teamId: null,
      teamLimit: null,
      teamLimitReset: null,
      ...over,
    };
    keys.set(k.id, k);
    return k;
  };

  /** GET /thing as `k`; answers the owner read only once the route's read has run. */
  async function get(
    k: KeyOwner,
    query = '',
    claims: Partial<{ scope: string; accountId: string }> = {},
    path = '/thing',
  ) {
    const before = reads.length;
    const token = await devServiceSigner('proxy').sign('billing', {
      kind: 'key',
      keyId: k.id,
      accountId: claims.accountId ?? k.accountId,
      scope: (claims.scope ?? k.scope) as 'inference',
    });
    const answer = fetch(`${url}${path}${query}`, { headers: { 'x-service-token': token } });
    // The read starts while the owner read is still unanswered: overlapped, not one after the other.
    await expect.poll(() => reads.length > before && pending.length > 0, { timeout: 5000 }).toBe(true);
    expect(reads.at(-1)).toBe(k.id);
    pending.shift()?.();
    const res = await answer;
    return { status: res.status, text: await res.text() };
  }

  it('a confirmed key gets what the read found', async () => {
    const k = key();
    const r = await get(k);
    expect(r.status, r.text).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ data: { secret: `figures of ${k.accountId}` } });
  });

  it('a confirmed key gets the read error (400)', async () => {
    const r = await get(key(), '?bad=1');
    expect(r.status, r.text).toBe(400);
    expect(r.text).toContain('not a generation id');
  });

  it.each([
    ['disabled', { disabled: true }],
    ['revoked', { revoked: true }],
    ['expired', { expiresAt: '2020-01-01T00:00:00.000Z' }],
  ] as const)('a %s key gets 401 and nothing the read found, nor its error', async (_, over) => {
    const k = key(over);
    for (const query of ['', '?bad=1']) {
      const r = await get(k, query);
      expect(r.status, r.text).toBe(401);
      expect(r.text).not.toContain('figures of');
      expect(r.text).not.toContain('not a generation id');
    }
  });

  it('a read that throws at once: 400 for a confirmed key, 401 for a revoked one', async () => {
    const ok = await get(key(), '', {}, '/sync');
    expect(ok.status, ok.text).toBe(400);
    expect(ok.text).toContain('thrown at once');
    const revoked = await get(key({ revoked: true }), '', {}, '/sync');
    expect(revoked.status, revoked.text).toBe(401);
    expect(revoked.text).not.toContain('thrown at once');
  });

  it('a token claiming another account or scope than the key has gets 401', async () => {
    const k = key();
    const other = await get(k, '', { accountId: randomUUID() });
    expect(other.status, other.text).toBe(401);
    expect(other.text).not.toContain('figures of');
    const scope = await get(k, '', { scope: 'management' });
    expect(scope.status, scope.text).toBe(401);
  });

  it("a management key (confirmed) gets 403 for an inference route, not the read's answer", async () => {
    const r = await get(key({ scope: 'management' }));
    expect(r.status, r.text).toBe(403);
    expect(r.text).not.toContain('figures of');
  });
});
