// The Kubernetes TokenReview call Kubernetes Auth makes: POST
// {host}/apis/authentication.k8s.io/v1/tokenreviews with the reviewer's bearer token,
// over TLS verified against the configured CA (or the system CAs), within a deadline and
// a size cap, never following redirects.
//
// A review that cannot be had is a fault, never a verdict on the token: the API server
// down, slow, a TLS failure, a 5xx or an answer that is not a TokenReview are
// ReviewUnavailable (the login answers 503 and Retry-After). The configured reviewer's
// credential refused (401 / 403) is a fault of the configuration, also 503; only when the
// caller's own token is its reviewer does a 401 / 403 speak of that token.
//
// The host is the administrator's, but a login makes the call: link-local addresses
// (cloud metadata services at 169.254.169.254, fe80::/10) and the unspecified address are
// refused, both as written and as a name resolves at connect time (a name that later
// resolves to such an address is refused then, not trusted from the check at configure time).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { normalizeAddress } from '../http/clientAddress.js';

/** A TokenReview answer larger than this is refused (the token echoed back is the largest part). */
export const MAX_REVIEW_BYTES = 64 * 1024;
export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

/** Names of metadata services that resolve to link-local addresses on cloud hosts. */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

const refused = new BlockList();
refused.addSubnet('169.254.0.0', 16, 'ipv4');
refused.addSubnet('0.0.0.0', 8, 'ipv4');
refused.addSubnet('fe80::', 10, 'ipv6');
refused.addAddress('::', 'ipv6');
// AWS's IPv6 metadata endpoint (fd00:ec2::254).
refused.addAddress('fd00:ec2::254', 'ipv6');

/** Whether an address is one a TokenReview may never be sent to. */
export function isRefusedAddress(address: string): boolean {
  const a = normalizeAddress(address);
  if (a === undefined) return true;
  return refused.check(a, isIP(a) === 4 ? 'ipv4' : 'ipv6');
}

/** Why a host name (not yet resolved) is refused; undefined when it may be asked. */
export function refusedHostReason(hostname: string): string | undefined {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  if (METADATA_NAMES.has(h)) return 'a cloud metadata service';
  if (isIP(h) && isRefusedAddress(h)) return 'a link-local or unspecified address';
  return undefined;
}

/**
 * `kubernetesHost` as Infisical takes it (`https://host[:port][/prefix]`, or without the
 * scheme), normalised to an https URL without a trailing slash; a string saying what is
 * wrong otherwise.
 */
export function parseKubernetesHost(text: string): URL | string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return 'kubernetesHost is not a URL';
  }
  if (url.protocol !== 'https:') return 'kubernetesHost must be an https URL (the TokenReview is sent over TLS)';
  if (url.username || url.password || url.search || url.hash) return 'kubernetesHost must not hold credentials, a query or a fragment';
  const why = refusedHostReason(url.hostname);
  if (why) return `kubernetesHost must not name ${why}`;
  url.pathname = url.pathname.replace(/\/+$/, '');
  return url;
}

/** The parts of a TokenReview's status a login reads. */
export interface ReviewStatus {
  authenticated: boolean;
  username: string;
  audiences: string[];
  error: string;
}

export type ReviewOutcome =
  | { kind: 'reviewed'; status: ReviewStatus }
  /** The API server refused the bearer token (401 / 403). */
  | { kind: 'reviewer-refused'; status: number };

/** The review could not be had (network, TLS, deadline, status, size, shape). */
export class ReviewUnavailable extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'ReviewUnavailable';
  }
}

export interface TokenReviewRequest {
  host: URL;
  /** PEM ('' = the system CAs). */
  caCert: string;
  /** The Authorization bearer: the reviewer JWT, or the token under review itself. */
  bearer: string;
  token: string;
  audiences?: string[];
  timeoutMs: number;
}

/** DNS as usual, but an answer naming a refused address fails the connection. */
function guardedLookup(hostname: string, options: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => isRefusedAddress(a.address));
    if (bad) {
      const e: NodeJS.ErrnoException = new Error('resolves to a refused address');
      e.code = 'EREFUSEDADDRESS';
      return callback(e, []);
    }
    if ((options as { all?: boolean }).all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}

/** Describes a failed connection without anything the caller sent. */
function describe(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (code === 'EREFUSEDADDRESS') return 'the host resolves to a refused (link-local or unspecified) address';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host name does not resolve';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|HOSTNAME|ALTNAME/.test(code)) return `TLS verification failed (${code})`;
  return code ? `connection failed (${code})` : 'connection failed';
}

function parseStatus(json: unknown): ReviewStatus | undefined {
  if (json === null || typeof json !== 'object') return undefined;
  const status = (json as { status?: unknown }).status;
  if (status === undefined) return { authenticated: false, username: '', audiences: [], error: '' };
  if (status === null || typeof status !== 'object') return undefined;
  const s = status as { authenticated?: unknown; user?: { username?: unknown }; audiences?: unknown; error?: unknown };
  return {
    authenticated: s.authenticated === true,
    username: typeof s.user?.username === 'string' ? s.user.username : '',
    audiences: Array.isArray(s.audiences) ? s.audiences.filter((a): a is string => typeof a === 'string') : [],
    error: typeof s.error === 'string' ? s.error.slice(0, 512) : '',
  };
}

/** One TokenReview. Throws ReviewUnavailable for every fault. */
export function reviewToken(r: TokenReviewRequest): Promise<ReviewOutcome> {
  return new Promise((resolve, reject) => {
    const why = refusedHostReason(r.host.hostname);
    if (why) return reject(new ReviewUnavailable(`the host names ${why}`));
    let done = false;
    const fail = (reason: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      reject(new ReviewUnavailable(reason));
    };
    const body = JSON.stringify({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: r.token, ...(r.audiences && r.audiences.length > 0 ? { audiences: r.audiences } : {}) },
    });
    const url = new URL(`${r.host.href.replace(/\/+$/, '')}${TOKEN_REVIEW_PATH}`);
    const options: RequestOptions = {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${r.bearer}`,
        'content-length': Buffer.byteLength(body),
      },
      rejectUnauthorized: true,
      ...(r.caCert !== '' ? { ca: r.caCert } : {}),
      lookup: guardedLookup as RequestOptions['lookup'],
      // No connection reuse: each review's TLS is verified against the configuration as it is now.
      agent: false,
    };
    const onResponse = (res: IncomingMessage) => {
      const code = res.statusCode ?? 0;
      if (code === 401 || code === 403) {
        res.resume();
        if (done) return;
        done = true;
        clearTimeout(timer);
        req.destroy();
        return resolve({ kind: 'reviewer-refused', status: code });
      }
      if (code !== 200 && code !== 201) {
        res.resume();
        return fail(`the API server answered ${code}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_REVIEW_BYTES) fail(`the answer is larger than ${MAX_REVIEW_BYTES} bytes`);
        else chunks.push(c);
      });
      res.on('error', () => fail('the answer was cut off'));
      res.on('end', () => {
        if (done) return;
        let status: ReviewStatus | undefined;
        try {
          status = parseStatus(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          status = undefined;
        }
        if (!status) return fail('the answer is not a TokenReview');
        done = true;
        clearTimeout(timer);
        resolve({ kind: 'reviewed', status });
      });
    };
    const req = httpsRequest(url, options, onResponse);
    const timer = setTimeout(() => fail(`no answer within ${r.timeoutMs} ms`), r.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => fail(describe(err)));
    req.end(body);
  });
}
