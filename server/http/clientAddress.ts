// Client addresses: which address a request came from (the socket's, or the one a trusted
// proxy reports in X-Forwarded-For), and IP ranges as Infisical shapes them
// ({ipAddress, type, prefix?}) with a matcher for them.
import { BlockList, isIP, SocketAddress } from 'node:net';

/** One trusted range, as Infisical stores it: no `prefix` means one address. */
export interface IpRange {
  ipAddress: string;
  type: 'ipv4' | 'ipv6';
  prefix?: number;
}

/** Every address, IPv4 and IPv6: the default of both Universal Auth lists. */
export const ANY_ADDRESS: readonly IpRange[] = Object.freeze([
  { ipAddress: '0.0.0.0', type: 'ipv4', prefix: 0 },
  { ipAddress: '::', type: 'ipv6', prefix: 0 },
]);

/**
 * An address in one canonical text: IPv6 compressed and lower case, an IPv4-mapped IPv6
 * address as plain IPv4. Undefined when `text` is not an IP address.
 */
export function normalizeAddress(text: string): string | undefined {
  const s = text.trim();
  const family = isIP(s);
  if (family === 4) return s;
  if (family !== 6 || s.includes('%')) return undefined;
  const canonical = new SocketAddress({ address: s, family: 'ipv6' }).address;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(canonical);
  return mapped ? mapped[1]! : canonical;
}

/** `10.0.0.0/8`, `192.168.1.7`, `::1`, `fd00::/8`; undefined when it is none of these. */
export function parseIpRange(text: string): IpRange | undefined {
  const s = text.trim();
  const slash = s.indexOf('/');
  const addressText = slash < 0 ? s : s.slice(0, slash);
  const family = isIP(addressText);
  if (family === 0 || addressText.includes('%')) return undefined;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const ipAddress = family === 4 ? addressText : new SocketAddress({ address: addressText, family: 'ipv6' }).address;
  if (slash < 0) return { ipAddress, type };
  const prefixText = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  return { ipAddress, type, prefix };
}

/** How a range is written: `a.b.c.d/n`, or the address alone. */
export function formatIpRange(r: IpRange): string {
  return r.prefix === undefined ? r.ipAddress : `${r.ipAddress}/${r.prefix}`;
}

/**
 * Whether an address lies in any of `ranges`. An IPv4-mapped IPv6 address matches IPv4
 * ranges; `::/0` matches every address (as in Infisical, which uses the same BlockList).
 * An address that is not an IP (or none at all) matches nothing.
 */
export function ipMatcher(ranges: readonly IpRange[]): (address: string | null | undefined) => boolean {
  if (ranges.length === 0) return () => false;
  const list = new BlockList();
  for (const r of ranges) {
    if (r.prefix === undefined) list.addAddress(r.ipAddress, r.type);
    else list.addSubnet(r.ipAddress, r.prefix, r.type);
  }
  // The default lists admit every address: answered without BlockList.check, which builds
  // a SocketAddress per call (access tokens are checked on every request).
  const everyAddress = ranges.some((r) => r.type === 'ipv6' && r.prefix === 0);
  const everyIpv4 = everyAddress || ranges.some((r) => r.type === 'ipv4' && r.prefix === 0);
  return (address) => {
    if (!address) return false;
    const a = normalizeAddress(address);
    if (a === undefined) return false;
    const family = isIP(a) === 4 ? 'ipv4' : 'ipv6';
    if (everyAddress || (family === 'ipv4' && everyIpv4)) return true;
    return list.check(a, family);
  };
}

/** `TRUSTED_PROXIES`: ranges separated by commas or spaces; the first bad one is named. */
export function parseIpRangeList(text: string): { ranges: IpRange[] } | { error: string } {
  const ranges: IpRange[] = [];
  for (const part of text.split(/[\s,]+/)) {
    if (part === '') continue;
    const r = parseIpRange(part);
    if (!r) return { error: `'${part.slice(0, 64)}' is not an IP address or CIDR range` };
    ranges.push(r);
  }
  return { ranges };
}

/**
 * The address a request came from. The socket's address, unless that is a trusted proxy:
 * then X-Forwarded-For is read from the right (the entry the nearest proxy appended),
 * skipping addresses that are themselves trusted proxies, and the first one that is not
 * is the client. Entries left of it are whatever the client chose to send, so they are
 * never believed. If every entry is a trusted proxy, the leftmost is the client; if an
 * entry is not an address, the last proxy that was believed is (the proxy passed on
 * something it did not write itself). With no trusted proxies (the default) the header
 * is ignored entirely.
 */
export function clientAddress(
  socketAddress: string,
  forwardedFor: string | undefined,
  isTrustedProxy: (address: string) => boolean,
): string {
  const socket = normalizeAddress(socketAddress) ?? socketAddress;
  if (!forwardedFor || !isTrustedProxy(socket)) return socket;
  const hops = forwardedFor.split(',');
  let client = socket;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]!);
    if (hop === undefined) return client;
    client = hop;
    if (!isTrustedProxy(hop)) return hop;
  }
  return client;
}
