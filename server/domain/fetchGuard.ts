// Where the service may connect when it fetches an issuer's keys (an OIDC discovery
// document, a JWKS): the rules that keep a third party's document from steering those
// fetches to the cloud's metadata service or into the service's own host.
//
// - Link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254,
//   100.100.100.200, 168.63.129.16, 192.0.0.0/24, their IPv4-in-IPv6 forms, names such
//   as metadata.google.internal), unspecified, multicast and reserved addresses are
//   never connected to: checked on the URL's host, and on every address a name resolves
//   to, at connect time (the request's own `lookup`), so a DNS answer that changes
//   between a check and the connection cannot get round it.
// - Loopback (127.0.0.0/8, ::1) is reached only when the URL itself names it (a loopback
//   literal, `localhost`): an operator's choice (a local issuer, the tests), never a name
//   that merely resolves there.
// - A discovery document's `jwks_uri` keeps the document's origin (scheme, host, port),
//   or names one the operator listed (OIDC_JWKS_ALLOWED_ORIGINS); https never becomes http.
// Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) stay allowed: in-cluster issuers
// (the Kubernetes API server) live there.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIPv4, isIPv6 } from 'node:net';

/** A fetch the rules refuse; the message names why (public material only: hosts, addresses). */
export class FetchRefused extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'FetchRefused';
  }
}

/** Names that are (or resolve only to) a cloud metadata service. */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

export type AddressVerdict = { kind: 'ok' } | { kind: 'loopback' } | { kind: 'refused'; why: string };

function ipv4Number(text: string): number | undefined {
  if (!isIPv4(text)) return undefined;
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail allowed); undefined if not one. */
function ipv6Groups(text: string): number[] | undefined {
  let s = text.replace(/^\[|\]$/g, '').split('%')[0]!;
  if (!isIPv6(s)) return undefined;
  const tail = s.slice(s.lastIndexOf(':') + 1);
  if (tail.includes('.')) {
    const n = ipv4Number(tail);
    if (n === undefined) return undefined;
    s = `${s.slice(0, s.length - tail.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const parse = (p: string) => (p === '' ? [] : p.split(':').map((g) => parseInt(g, 16)));
  const a = parse(head);
  const b = rest === undefined ? [] : parse(rest);
  const groups = rest === undefined ? a : [...a, ...new Array<number>(8 - a.length - b.length).fill(0), ...b];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

const inV4 = (n: number, base: string, bits: number) => {
  const b = ipv4Number(base)!;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return ((n & mask) >>> 0) === ((b & mask) >>> 0);
};

function classifyV4(n: number, shown: string): AddressVerdict {
  const refused = (what: string): AddressVerdict => ({ kind: 'refused', why: `${shown} is ${what}` });
  if (inV4(n, '127.0.0.0', 8)) return { kind: 'loopback' };
  if (inV4(n, '0.0.0.0', 8)) return refused('an unspecified address (it reaches this host)');
  if (inV4(n, '169.254.0.0', 16)) return refused('a link-local address (where cloud metadata services answer)');
  if (n === ipv4Number('100.100.100.200')) return refused('a cloud metadata address');
  if (n === ipv4Number('168.63.129.16')) return refused('a cloud platform address');
  if (inV4(n, '192.0.0.0', 24)) return refused('an IETF protocol address (a cloud metadata address among them)');
  if (inV4(n, '224.0.0.0', 4) || inV4(n, '240.0.0.0', 4)) return refused('not a unicast address');
  return { kind: 'ok' };
}

/** Where an address (IPv4, IPv6, IPv4 inside IPv6) sits among the rules above. */
export function classifyAddress(address: string): AddressVerdict {
  const v4 = ipv4Number(address);
  if (v4 !== undefined) return classifyV4(v4, address);
  const g = ipv6Groups(address);
  if (!g) return { kind: 'refused', why: `${address} is not an IP address` };
  const shown = address.replace(/^\[|\]$/g, '');
  const refused = (what: string): AddressVerdict => ({ kind: 'refused', why: `${shown} is ${what}` });
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const embedded = (hi: number, lo: number) => classifyV4(((g[hi]! << 16) >>> 0) + g[lo]!, `${shown} (IPv4 ${g[hi]! >>> 8}.${g[hi]! & 255}.${g[lo]! >>> 8}.${g[lo]! & 255})`);
  if (zero(0, 8)) return refused('the unspecified address');
  if (zero(0, 7) && g[7] === 1) return { kind: 'loopback' };
  if ((g[0]! & 0xffc0) === 0xfe80) return refused('a link-local address');
  if ((g[0]! & 0xffc0) === 0xfec0) return refused('a site-local address');
  if ((g[0]! & 0xff00) === 0xff00) return refused('not a unicast address');
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && zero(2, 7) && g[7] === 0x254) return refused('a cloud metadata address');
  // IPv4 carried in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), SIIT
  // (::ffff:0:a.b.c.d), NAT64 (64:ff9b::a.b.c.d, 64:ff9b:1::/48) and 6to4 (2002:AABB:CCDD::).
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return embedded(6, 7);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(6, 7);
  if (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1)) return embedded(6, 7);
  if (g[0] === 0x2002) return embedded(1, 2);
  return { kind: 'ok' };
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
const isLoopbackName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/**
 * What can be said of a URL without resolving it: a metadata name or a refused address
 * literal. Undefined when the host may be tried (a name is checked again, resolved, at
 * connect time).
 */
export function hostRefusal(url: URL): string | undefined {
  const host = hostOf(url);
  if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata name`;
  if (isIPv4(host) || isIPv6(host)) {
    const v = classifyAddress(host);
    if (v.kind === 'refused') return v.why;
  }
  return undefined;
}

export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request that connects only to addresses the rules allow for
 * `url`: every answer is checked (one refused address refuses the name), loopback only
 * for a host that names it. The refusal reaches the request's 'error' as FetchRefused.
 */
export function guardedLookup(url: URL, resolve: Resolve = systemResolve) {
  const loopbackNamed = isLoopbackName(hostOf(url));
  return (hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (answers) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
        const usable = answers.filter((a) => family === 0 || a.family === family);
        for (const a of answers) {
          const v = classifyAddress(a.address);
          if (v.kind === 'refused') return callback(new FetchRefused(`${hostname} resolves to ${a.address}: ${v.why}`), '');
          if (v.kind === 'loopback' && !loopbackNamed) {
            return callback(new FetchRefused(`${hostname} resolves to a loopback address (${a.address}); only a URL that names loopback itself may reach it`), '');
          }
        }
        if (usable.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(err, ''),
    );
  };
}

/** The origins an OIDC_JWKS_ALLOWED_ORIGINS text lists (comma- or space-separated), or the first entry that is not one. */
export function parseOriginList(text: string): { origins: string[] } | { error: string } {
  const origins: string[] = [];
  for (const entry of text.split(/[\s,]+/).filter((e) => e !== '')) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return { error: `'${entry.slice(0, 100)}' is not an origin (https://host[:port])` };
    }
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash || url.pathname !== '/') {
      return { error: `'${entry.slice(0, 100)}' is not an origin (https://host[:port], no path)` };
    }
    const refused = hostRefusal(url);
    if (refused) return { error: `'${entry.slice(0, 100)}': ${refused}` };
    origins.push(url.origin);
  }
  return { origins };
}

/**
 * Why a discovery document's `jwks_uri` may not be fetched; undefined when it may: the
 * document's own origin, or one the operator listed; never https → http.
 */
export function jwksUriRefusal(discovery: URL, jwks: URL, allowedOrigins: readonly string[] = []): string | undefined {
  if (discovery.protocol === 'https:' && jwks.protocol !== 'https:') {
    return `jwks_uri ${jwks.origin} downgrades the discovery document's https to ${jwks.protocol.slice(0, -1)}`;
  }
  if (jwks.origin === discovery.origin || allowedOrigins.includes(jwks.origin)) return undefined;
  return `jwks_uri ${jwks.origin} is not the discovery document's origin (${discovery.origin}) nor one listed in OIDC_JWKS_ALLOWED_ORIGINS`;
}

// -- Webhook targets ------------------------------------------------------------------
// A webhook's URL is chosen by a project admin, not by the operator: stricter than the
// issuer fetches above. Loopback and private ranges (10/8, 172.16/12, 192.168/16,
// 100.64/10, fc00::/7, and their IPv4-in-IPv6 forms) are refused too, unless the operator
// allows private ranges (WEBHOOK_ALLOW_PRIVATE_RANGES) or lists the URL's origin
// (WEBHOOK_ALLOWED_ORIGINS: in-cluster receivers such as Reloader). Link-local, metadata,
// unspecified, multicast and reserved addresses are refused whatever the settings.
// Checked when the webhook is created and again at every delivery, on every address the
// name resolves to at connect time.

export interface WebhookTargetPolicy {
  /** Loopback and private ranges allowed for every webhook. */
  allowPrivate: boolean;
  /** Origins (scheme://host[:port]) allowed to be loopback or private. */
  allowedOrigins: readonly string[];
}

/** The IPv4 address (as a number) an IPv6 address carries, when it carries one. */
function embeddedV4(address: string): number | undefined {
  const v4 = ipv4Number(address);
  if (v4 !== undefined) return v4;
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const at = (hi: number, lo: number) => ((g[hi]! << 16) >>> 0) + g[lo]!;
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0) && !(zero(0, 7) && g[7]! <= 1)) return at(6, 7);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return at(6, 7);
  if (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1)) return at(6, 7);
  if (g[0] === 0x2002) return at(1, 2);
  return undefined;
}

/** Whether `address` is in a private, shared (CGNAT) or unique-local range. */
export function isPrivateAddress(address: string): boolean {
  const v4 = embeddedV4(address);
  if (v4 !== undefined) return inV4(v4, '10.0.0.0', 8) || inV4(v4, '172.16.0.0', 12) || inV4(v4, '192.168.0.0', 16) || inV4(v4, '100.64.0.0', 10) || inV4(v4, '127.0.0.0', 8);
  const g = ipv6Groups(address);
  return g !== undefined && (g[0]! & 0xfe00) === 0xfc00;
}

/** Why a webhook may not connect to `address` (undefined: it may). */
export function webhookAddressRefusal(address: string, privateAllowed: boolean): string | undefined {
  const v = classifyAddress(address);
  if (v.kind === 'refused') return v.why;
  if (privateAllowed) return undefined;
  const shown = address.replace(/^\[|\]$/g, '');
  if (v.kind === 'loopback') return `${shown} is a loopback address (allowed only with WEBHOOK_ALLOW_PRIVATE_RANGES or WEBHOOK_ALLOWED_ORIGINS)`;
  if (isPrivateAddress(address)) return `${shown} is a private address (allowed only with WEBHOOK_ALLOW_PRIVATE_RANGES or WEBHOOK_ALLOWED_ORIGINS)`;
  return undefined;
}

const privateAllowedFor = (url: URL, policy: WebhookTargetPolicy) => policy.allowPrivate || policy.allowedOrigins.includes(url.origin);

/** What can be refused of a webhook URL without resolving it: its scheme, credentials, a metadata name, a refused literal. */
export function webhookUrlRefusal(url: URL, policy: WebhookTargetPolicy): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'the URL must be http or https';
  const host = hostOf(url);
  if (METADATA_NAMES.has(host)) return `${host} is a cloud metadata name`;
  const privateAllowed = privateAllowedFor(url, policy);
  if (isIPv4(host) || isIPv6(host)) return webhookAddressRefusal(host, privateAllowed);
  if (!privateAllowed && isLoopbackName(host)) return `${host} is a loopback name (allowed only with WEBHOOK_ALLOW_PRIVATE_RANGES or WEBHOOK_ALLOWED_ORIGINS)`;
  return undefined;
}

/** webhookUrlRefusal, then every address the name resolves to now (a webhook being created). */
export async function webhookTargetRefusal(url: URL, policy: WebhookTargetPolicy, resolve: Resolve = systemResolve): Promise<string | undefined> {
  const literal = webhookUrlRefusal(url, policy);
  if (literal) return literal;
  const host = hostOf(url);
  if (isIPv4(host) || isIPv6(host)) return undefined;
  let answers: LookupAddress[];
  try {
    answers = await resolve(host);
  } catch {
    return `${host} does not resolve`;
  }
  if (answers.length === 0) return `${host} does not resolve`;
  const privateAllowed = privateAllowedFor(url, policy);
  for (const a of answers) {
    const why = webhookAddressRefusal(a.address, privateAllowed);
    if (why) return `${host} resolves to ${a.address}: ${why}`;
  }
  return undefined;
}

/** A `lookup` for a webhook delivery: every address the name resolves to at connect time must pass webhookAddressRefusal. */
export function webhookLookup(url: URL, policy: WebhookTargetPolicy, resolve: Resolve = systemResolve) {
  const privateAllowed = privateAllowedFor(url, policy);
  return (hostname: string, options: { family?: number | string; all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (answers) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
        for (const a of answers) {
          const why = webhookAddressRefusal(a.address, privateAllowed);
          if (why) return callback(new FetchRefused(`${hostname} resolves to ${a.address}: ${why}`), '');
        }
        const usable = answers.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(err, ''),
    );
  };
}
