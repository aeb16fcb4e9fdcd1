import { describe, expect, it } from 'vitest';
import { backoffMs } from './delivery';
import { createUrlGuard, isBlocked, parseCidrs } from './url-guard';

describe('webhook URL guard (SSRF)', () => {
  const none = parseCidrs('');
  it('refuses loopback, link-local, private, CGNAT, multicast and mapped addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.5',
      '172.16.3.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ]) {
      expect(isBlocked(a, none), a).toBe(true);
    }
    for (const a of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111'])
      expect(isBlocked(a, none), a).toBe(false);
  });

  it('lets the allow-list open exactly what it names', () => {
    const allowed = parseCidrs('127.0.0.1, 10.1.0.0/16');
    expect(isBlocked('127.0.0.1', allowed)).toBe(false);
    expect(isBlocked('127.0.0.2', allowed)).toBe(true);
    expect(isBlocked('10.1.9.9', allowed)).toBe(false);
    expect(isBlocked('10.2.0.1', allowed)).toBe(true);
    expect(() => parseCidrs('localhost')).toThrow(/not an IP/);
    expect(() => parseCidrs('10.0.0.0/40')).toThrow(/prefix/);
  });

  it('resolves names and refuses one that points inside', async () => {
    const guard = createUrlGuard({ allowedCidrs: '' });
    await expect(guard.resolve(new URL('http://localhost:9/'))).rejects.toThrow(/private or reserved/);
    await expect(guard.resolve(new URL('http://[::1]/'))).rejects.toThrow(/private or reserved/);
    expect(() => guard.parse('javascript:alert(1)')).toThrow(/http\(s\)/);
  });
});

describe('delivery backoff', () => {
  it('doubles from the base up to the cap, with at most 10 % jitter', () => {
    const none = () => 0;
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 1000, 8000, none))).toEqual([
      1000, 2000, 4000, 8000, 8000, 8000,
    ]);
    expect(backoffMs(3, 1000, 8000, () => 1)).toBe(4400);
  });
});
