import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { badRequest } from '@tollgate/errors';

/**
 * SSRF guard of webhook URLs: http(s) only, no credentials, and every address the host resolves to
 * must be public — loopback, link-local (cloud metadata at 169.254.169.254), private, CGNAT,
 * multicast and reserved ranges are refused unless `WEBHOOK_ALLOWED_CIDRS` lists them. Checked when
 * an endpoint is saved and again at every delivery (the name may resolve elsewhere by then), and the
 * delivery connects to the address that was checked (no second lookup to rebind).
 */
export interface UrlGuard {
  /** 400 when the URL cannot be a webhook target (syntax, scheme, credentials). */
  parse(raw: string): URL;
  /** The address to connect to, or throws `BlockedAddress` naming why. */
  resolve(url: URL): Promise<{ address: string; family: 4 | 6 }>;
}

export class BlockedAddress extends Error {
  readonly code = 'EBLOCKED';
}

const denied = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  denied.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  denied.addSubnet(net, bits, 'ipv6');

/** Parses `10.0.0.0/8,::1/128,127.0.0.1` (a bare address is a /32 or /128). */
export function parseCidrs(list: string): BlockList {
  const allowed = new BlockList();
  for (const item of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [addr = '', bitsText] = item.split('/');
    const family = isIP(addr);
    if (family === 0) throw new Error(`${item}: not an IP address or CIDR`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    const bits = bitsText === undefined ? (family === 4 ? 32 : 128) : Number(bitsText);
    if (!Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128))
      throw new Error(`${item}: bad prefix length`);
    allowed.addSubnet(addr, bits, type);
  }
  return allowed;
}

export function isBlocked(address: string, allowed: BlockList): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4 address. (Node's BlockList matches
  // every IPv4 address against a ::ffff:0:0/96 rule, so the mapped range cannot be a rule itself.)
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return isBlocked(mapped, allowed);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [hi, lo] = [Number.parseInt(hex[1] as string, 16), Number.parseInt(hex[2] as string, 16)];
    return isBlocked(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, allowed);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (allowed.check(address, type)) return false;
  return denied.check(address, type);
}

export function createUrlGuard(options: { allowedCidrs: string }): UrlGuard {
  const allowed = parseCidrs(options.allowedCidrs);
  return {
    parse(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw badRequest('url: must be an absolute http(s) URL');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:')
        throw badRequest('url: must be an absolute http(s) URL');
      if (url.username || url.password) throw badRequest('url: must not carry credentials');
      if (raw.length > 2048) throw badRequest('url: must be at most 2048 characters');
      return url;
    },
    async resolve(url) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const found = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true });
      if (found.length === 0) throw new BlockedAddress(`${host} does not resolve`);
      for (const a of found) {
        if (isBlocked(a.address, allowed))
          throw new BlockedAddress(`${host} resolves to ${a.address}, a private or reserved address`);
      }
      const first = found[0] as { address: string; family: number };
      return { address: first.address, family: first.family === 6 ? 6 : 4 };
    },
  };
}
