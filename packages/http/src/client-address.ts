import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';

/**
 * The client's address behind load balancers (issue 23): which `X-Forwarded-For` entries to believe.
 *
 * - `hops: n` — n proxies stand in front of this service (n = 0: none; the TCP peer is the client).
 *   The client is the n-th address from the right of `X-Forwarded-For, peer`: with one load balancer
 *   (n = 1), the last entry of `X-Forwarded-For`, the one the balancer appended.
 * - `cidrs` — the addresses of the proxies themselves: starting from the TCP peer, each trusted
 *   address hands over to the entry on its left; the first address not in the list is the client.
 *
 * Entries a client wrote itself (left of what the trusted proxies appended) are never believed, and a
 * malformed entry stops the walk (the last good address is the client). Without a setting (the
 * default) the header is ignored: believing it from an untrusted peer would let every request choose
 * its own address and so escape every per-address limit.
 */
export type TrustedProxies = { hops: number } | { cidrs: BlockList; text: string };

/** Shorthands for the usual proxy networks. */
const NAMED: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/** Most `X-Forwarded-For` entries looked at (from the right); more trusted hops than this are not real. */
const MAX_HOPS = 32;

function addCidr(list: BlockList, entry: string): void {
  const [address = '', bits, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) throw new Error(`"${entry}" is not an IP address or CIDR`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const max = family === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!/^\d{1,3}$/.test(bits ?? String(max)) || prefix > max) {
    throw new Error(`"${entry}": prefix length must be 0-${max}`);
  }
  list.addSubnet(address, prefix, type);
}

/**
 * `TRUSTED_PROXIES`: empty or `0` (default: the TCP peer is the client), a hop count `1`…`32`, or a
 * comma-separated list of IP addresses, CIDRs and the names `loopback`, `private`, `linklocal`.
 * Throws with a message naming the bad entry.
 */
export function parseTrustedProxies(text: string): TrustedProxies {
  const trimmed = text.trim();
  if (trimmed === '') return { hops: 0 };
  if (/^\d+$/.test(trimmed)) {
    const hops = Number(trimmed);
    if (hops > MAX_HOPS) throw new Error(`a hop count must be 0-${MAX_HOPS}`);
    return { hops };
  }
  const list = new BlockList();
  for (const raw of trimmed.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    for (const cidr of NAMED[entry.toLowerCase()] ?? [entry]) addCidr(list, cidr);
  }
  return { cidrs: list, text: trimmed };
}

/**
 * The env entry (`TRUSTED_PROXIES`), validated at start and kept as text (configs round-trip through
 * env strings); spread into a service's schema and hand the value to `clientAddressResolver`.
 */
export const trustedProxiesEnv = {
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .superRefine((v, ctx) => {
      try {
        parseTrustedProxies(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
};

/** `1.2.3.4`, `::ffff:1.2.3.4` and `1.2.3.4:5678` (some balancers add the port) are one address. */
function normalize(entry: string): string | null {
  let a = entry.trim();
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end < 0) return null;
    a = a.slice(1, end);
  } else if (a.includes('.') && a.indexOf(':') === a.lastIndexOf(':') && a.includes(':')) {
    a = a.slice(0, a.indexOf(':'));
  }
  const family = isIP(a);
  if (family === 0) return null;
  if (family === 6 && a.toLowerCase().startsWith('::ffff:') && isIP(a.slice(7)) === 4) return a.slice(7);
  return family === 6 ? a.toLowerCase() : a;
}

/** The header's entries, right to left (the nearest proxy's first), at most MAX_HOPS. */
function forwardedRightToLeft(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const parts = (Array.isArray(header) ? header.join(',') : header).split(',');
  return parts.slice(-MAX_HOPS).reverse();
}

/** Resolves a request's client address under `trust` (see TrustedProxies). */
export type ClientAddress = (req: Pick<IncomingMessage, 'headers' | 'socket'>) => string;

/** `trust`: the parsed setting, or its text (`TRUSTED_PROXIES`; throws when malformed). */
export function clientAddressResolver(setting: TrustedProxies | string): ClientAddress {
  const trust = typeof setting === 'string' ? parseTrustedProxies(setting) : setting;
  const peerOf = (req: Pick<IncomingMessage, 'socket'>) => {
    const peer = req.socket.remoteAddress;
    return (peer && normalize(peer)) ?? peer ?? 'unknown';
  };
  if ('hops' in trust && trust.hops === 0) return peerOf;
  return (req) => {
    let client = peerOf(req);
    const entries = forwardedRightToLeft(req.headers['x-forwarded-for']);
    for (let i = 0; i < entries.length; i++) {
      if ('hops' in trust ? i >= trust.hops : !isTrusted(trust.cidrs, client)) break;
      const next = normalize(entries[i] as string);
      if (next === null) break;
      client = next;
    }
    return client;
  };
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Internal calls made on a client's behalf (the proxy's forwarder, the dashboard's upstream client)
 * carry the client's address as resolved at the edge in this header; the owner trusts it only on a
 * request whose service token it verified (a client's own header never passes the edge: the
 * forwarder builds its headers from scratch).
 */
export const CLIENT_ADDRESS_HEADER = 'x-tollgate-client-address';
/** The dashboard user a dashboard call acts for (the audit log's actor). */
export const ACTOR_USER_HEADER = 'x-tollgate-actor-user';
/** The management key (its id) a keys-service call acts for (the audit log's actor). */
export const ACTOR_KEY_HEADER = 'x-tollgate-actor-key';

const MAX_ADDRESS_LENGTH = 64;

/** The forwarded client address of an internal call, or null when absent or not an address. */
export function forwardedClientAddress(req: Pick<IncomingMessage, 'headers'>): string | null {
  const value = req.headers[CLIENT_ADDRESS_HEADER];
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ADDRESS_LENGTH) return null;
  return normalize(value) ?? null;
}
