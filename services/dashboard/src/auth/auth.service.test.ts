/**
 * The auth service against a real Postgres database (its own, migrated): the order of the expensive
 * steps. Password hashing is the real scrypt, wrapped to count calls.
 */
import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@tollgate/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDashboardDb, type DashboardDb, migrateDashboardDb } from '../database';
import { createAuthService } from './auth.service';
import * as password from './password';

vi.mock('./password', async (original) => {
  const real = await original<typeof import('./password')>();
  return { ...real, hashPassword: vi.fn(real.hashPassword), verifyPassword: vi.fn(real.verifyPassword) };
});

let database: TestDatabase;
let db: DashboardDb;
const auth = () =>
  createAuthService({
    db,
    clock: () => new Date(),
    sessionTtlMs: 60_000,
    sessionIdleMs: 60_000,
    inviteTtlMs: 3_600_000,
    maxFailures: 3,
    windowMs: 600_000,
    // Real clock: a backoff longer than any test, so a slow host cannot outlast it.
    backoffBaseMs: 300_000,
  });

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDashboardDb(database.url, { max: 20 });
  await migrateDashboardDb(db);
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});
beforeEach(() => {
  vi.mocked(password.hashPassword).mockClear();
});

describe('accepting an invitation', () => {
  it('refuses a made-up link with 404 before hashing the password', async () => {
    const service = auth();
    const attempts = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) => service.acceptInvite(`made-up-${i}`, 'long enough password')),
    );
    for (const a of attempts) {
      expect(a.status).toBe('rejected');
      expect((a as PromiseRejectedResult).reason).toMatchObject({ type: 'not_found' });
    }
    expect(password.hashPassword).not.toHaveBeenCalled();
  });

  it('hashes once for a valid link, which then works only once', async () => {
    const service = auth();
    const { token } = await service.invite({
      actor: null,
      accountId: randomUUID(),
      email: `u-${randomUUID()}@example.test`,
      displayName: 'U',
      role: 'viewer',
    });
    const [first, second] = await Promise.allSettled([
      service.acceptInvite(token, 'long enough password'),
      service.acceptInvite(token, 'another long password'),
    ]);
    // Both may pass the early check; the atomic consume lets exactly one through.
    expect([first.status, second.status].sort()).toEqual(['fulfilled', 'rejected']);
    expect(vi.mocked(password.hashPassword).mock.calls.length).toBeGreaterThanOrEqual(1);
    await expect(service.acceptInvite(token, 'long enough password')).rejects.toMatchObject({
      type: 'not_found',
    });
  });
});

describe('signing in', () => {
  it('checks at most maxFailures passwords of parallel guesses, and takes back a success', async () => {
    const service = auth();
    const email = `p-${randomUUID()}@example.test`;
    const { token } = await service.invite({
      actor: null,
      accountId: randomUUID(),
      email,
      displayName: 'P',
      role: 'owner',
    });
    await service.acceptInvite(token, 'the right password');
    vi.mocked(password.verifyPassword).mockClear();
    // Two failures, then a success: the success clears the email's count.
    for (const guess of ['wrong one!!!', 'wrong two!!!'])
      await expect(service.signIn(email, guess, '10.0.0.1')).rejects.toMatchObject({ type: 'unauthorized' });
    await service.signIn(email, 'the right password', '10.0.0.1');
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => service.signIn(email, `parallel guess ${i}`, '10.0.0.2')),
    );
    const codes = results.map((r) => (r.status === 'rejected' ? (r.reason as { type: string }).type : 'ok'));
    expect(codes.filter((c) => c === 'unauthorized').length).toBeLessThanOrEqual(3);
    expect(codes.filter((c) => c !== 'unauthorized' && c !== 'rate_limited')).toEqual([]);
    // 3 (sequential) + at most 3 of the parallel ones reached the password check.
    expect(vi.mocked(password.verifyPassword).mock.calls.length).toBeLessThanOrEqual(6);
    await expect(service.signIn(email, 'the right password', '10.0.0.2')).rejects.toMatchObject({
      type: 'rate_limited',
    });
    // Throttled on (email, address): the owner elsewhere is not locked out by those guesses.
    await expect(service.signIn(email, 'the right password', '10.0.0.3')).resolves.toMatchObject({
      token: expect.any(String),
    });
  });
});

describe('sign-in throttle: (email, address) with backoff', () => {
  let now = Date.UTC(2026, 10, 26, 12);
  const clocked = (maxFailures = 3) =>
    createAuthService({
      db,
      clock: () => new Date(now),
      sessionTtlMs: 60_000,
      sessionIdleMs: 60_000,
      inviteTtlMs: 3_600_000,
      maxFailures,
      windowMs: 600_000,
      backoffBaseMs: 1_000,
    });
  async function owner(service: ReturnType<typeof clocked>) {
    const email = `b-${randomUUID()}@example.test`;
    const { token } = await service.invite({
      actor: null,
      accountId: randomUUID(),
      email,
      displayName: 'B',
      role: 'owner',
    });
    await service.acceptInvite(token, 'the right password');
    return email;
  }
  const rows = async (like: string) =>
    db
      .selectFrom('dashboard.sign_in_failures')
      .selectAll()
      .where('subject', 'like', like)
      .orderBy('subject')
      .execute();
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: { type: string; metadata?: { retry_after_seconds?: number } }) =>
        e.type === 'rate_limited' ? `429:${e.metadata?.retry_after_seconds}` : e.type,
    );

  it('backs off exponentially instead of locking, and a refused attempt writes nothing', async () => {
    const service = clocked();
    const email = await owner(service);
    const stranger = `198.51.100.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 3; i++)
      expect(await outcome(service.signIn(email, 'wrong guess!!', stranger))).toBe('unauthorized');
    const before = await rows(`%${email}`);
    // In backoff: refused, and nothing is written (no new row, no count, no longer backoff).
    for (let i = 0; i < 5; i++)
      expect(await outcome(service.signIn(email, 'wrong guess!!', stranger))).toBe('429:1');
    expect(await rows(`%${email}`)).toEqual(before);
    now += 1_000;
    expect(await outcome(service.signIn(email, 'wrong guess!!', stranger))).toBe('unauthorized');
    expect(await outcome(service.signIn(email, 'wrong guess!!', stranger))).toBe('429:2');
    now += 2_000;
    expect(await outcome(service.signIn(email, 'wrong guess!!', stranger))).toBe('unauthorized');
    expect(await outcome(service.signIn(email, 'the right password', stranger))).toBe('429:4');
    // The owner, from another address, was never affected; from the same one, after the backoff.
    expect(await outcome(service.signIn(email, 'the right password', '203.0.113.7'))).toBe('ok');
    now += 4_000;
    expect(await outcome(service.signIn(email, 'the right password', stranger))).toBe('ok');
    expect(await rows(`pair:${stranger}|${email}`)).toEqual([]);
  });

  it('backs off an address that fails across many emails (10× the limit), not the others', async () => {
    const service = clocked(1); // so 10 failures per address, each a real scrypt check
    const email = await owner(service);
    const sprayer = `192.0.2.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 10; i++) {
      expect(await outcome(service.signIn(`nobody-${i}-${randomUUID()}@example.test`, 'x', sprayer))).toBe(
        'unauthorized',
      );
    }
    expect(await outcome(service.signIn(email, 'the right password', sprayer))).toBe('429:1');
    expect(await outcome(service.signIn(email, 'the right password', '203.0.113.8'))).toBe('ok');
  }, 240_000); // 12 scrypts at N=2^17: 13 s of CPU, ~80 s of wall time on a loaded host (load average 44)

  it('sweeps rows whose window and backoff are over', async () => {
    const service = clocked();
    const address = `100.64.0.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 5; i++) await outcome(service.signIn(`gone-${i}@example.test`, 'x', address));
    expect((await rows(`%${address}%`)).length).toBe(6); // 5 pairs + the address
    now += 600_000 + 60_000;
    await outcome(clocked().signIn('someone@example.test', 'x', '203.0.113.9'));
    expect(await rows(`%${address}%`)).toEqual([]);
  });
});
