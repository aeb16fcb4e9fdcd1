import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clientAddressResolver, parseTrustedProxies, trustedProxiesEnv } from './client-address';

const req = (peer: string, xff?: string | string[]) => ({
  socket: { remoteAddress: peer } as never,
  headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
});
const resolve = (setting: string, peer: string, xff?: string | string[]) =>
  clientAddressResolver(parseTrustedProxies(setting))(req(peer, xff));

describe('client address without a trusted proxy (the default)', () => {
  it('is the TCP peer and ignores X-Forwarded-For', () => {
    expect(resolve('', '203.0.113.9', '198.51.100.1')).toBe('203.0.113.9');
    expect(resolve('0', '::ffff:203.0.113.9', '198.51.100.1')).toBe('203.0.113.9');
  });
});

describe('client address with a hop count', () => {
  it('takes the entry the nearest balancer appended, never what the client wrote', () => {
    expect(resolve('1', '10.0.0.5', '198.51.100.1')).toBe('198.51.100.1');
    // The client sent its own X-Forwarded-For: 1.1.1.1; the balancer appended the real address.
    expect(resolve('1', '10.0.0.5', '1.1.1.1, 198.51.100.1')).toBe('198.51.100.1');
    expect(resolve('2', '10.0.0.5', '1.1.1.1, 198.51.100.1, 10.0.0.9')).toBe('198.51.100.1');
  });

  it('stops at the leftmost entry, or at a malformed one, and reads repeated headers as one list', () => {
    expect(resolve('3', '10.0.0.5', '198.51.100.1')).toBe('198.51.100.1');
    expect(resolve('1', '10.0.0.5')).toBe('10.0.0.5');
    expect(resolve('2', '10.0.0.5', 'not-an-ip, 10.0.0.9')).toBe('10.0.0.9');
    expect(resolve('1', '10.0.0.5', ['1.1.1.1', '198.51.100.1'])).toBe('198.51.100.1');
  });

  it('reads ports and brackets as the same address', () => {
    expect(resolve('1', '10.0.0.5', '198.51.100.1:5123')).toBe('198.51.100.1');
    expect(resolve('1', '10.0.0.5', '[2001:DB8::1]:443')).toBe('2001:db8::1');
  });
});

describe('client address with trusted CIDRs', () => {
  it('walks left past trusted proxies only', () => {
    const s = '10.0.0.0/8, 192.168.1.1';
    expect(resolve(s, '10.0.0.5', '1.1.1.1, 198.51.100.1, 192.168.1.1')).toBe('198.51.100.1');
    // An untrusted peer's header is ignored.
    expect(resolve(s, '203.0.113.9', '198.51.100.1')).toBe('203.0.113.9');
    expect(resolve('private', '::ffff:10.1.2.3', '198.51.100.1')).toBe('198.51.100.1');
    expect(resolve('loopback', '::1', '2001:db8::7')).toBe('2001:db8::7');
  });

  it('is the leftmost entry when every hop is trusted', () => {
    expect(resolve('private', '10.0.0.5', '10.0.0.6, 10.0.0.7')).toBe('10.0.0.6');
  });
});

describe('TRUSTED_PROXIES', () => {
  const schema = z.object(trustedProxiesEnv);
  it('refuses a bad entry with a message naming it', () => {
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.1/8/1', '99', '::1/129']) {
      const r = schema.safeParse({ TRUSTED_PROXIES: bad });
      expect(r.success, bad).toBe(false);
    }
  });
  it('accepts hop counts, addresses, CIDRs and names', () => {
    for (const ok of ['', '1', '10.0.0.0/8,fd00::/8', 'loopback, private', '203.0.113.4']) {
      expect(schema.safeParse({ TRUSTED_PROXIES: ok }).success, ok).toBe(true);
    }
  });
});
