import { describe, expect, it } from 'vitest';
import { hashPassword, needsRehash, verifyPassword } from './password';

describe('password hashing (scrypt)', () => {
  it('verifies the right password only, with a fresh salt per hash', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('horse');
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', a)).toBe(false);
    expect(await verifyPassword('', a)).toBe(false);
  });

  it('answers false for a user without a password (after the same work) and for a malformed hash', async () => {
    expect(await verifyPassword('anything at all', null)).toBe(false);
    expect(await verifyPassword('anything at all', 'plain$text')).toBe(false);
  });

  it('hashes at N=2^17 and marks older hashes for a rehash (they still verify)', async () => {
    const current = await hashPassword('correct horse battery staple');
    expect(needsRehash(current)).toBe(false);
    // A hash of the former parameters (N=2^15), as stored before.
    const old = 'scrypt$32768$8$1$c2FsdHNhbHRzYWx0c2FsdA==$' + 'x'.repeat(43) + '=';
    expect(needsRehash(old)).toBe(true);
  });
});
