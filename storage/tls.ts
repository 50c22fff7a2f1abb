// TLS to PostgreSQL and Redis: what DATABASE_URL's sslmode, REDIS_URL's scheme and the CA
// files ask for, as postgres.js and ioredis options. Left to itself, postgres.js reads
// sslmode=require as "encrypt, verify nothing" even with a CA, checks the host name under
// verify-ca, has no CA file, and sends `sslrootcert` to the server as a run-time parameter
// (which the server refuses): so the TLS parameters are taken out of the URL here and
// given to the driver as Node TLS options, with libpq's meaning.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A transport setting that cannot be applied as written; the message names the setting. */
export class TransportConfigError extends Error {
  override readonly name = 'TransportConfigError';
}

/** The PEM certificates of a CA file, checked to parse; `setting` names it in every refusal. */
export function readCaFile(path: string, setting: string): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TransportConfigError(`${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new TransportConfigError(`${setting}: ${path} holds no PEM certificate`);
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch {
      throw new TransportConfigError(`${setting}: ${path} holds a certificate that does not parse`);
    }
  }
  return pem;
}

export interface PostgresTls {
  /** DATABASE_URL without its TLS parameters (postgres.js would send them to the server). */
  url: string;
  /** postgres.js's `ssl` option. */
  ssl: false | 'allow' | 'prefer' | 'require' | ConnectionOptions;
  /** The mode applied (require with a CA is verify-ca, as in libpq). */
  mode: SslMode;
}

/** URL parameters about TLS that libpq knows and this service does not apply: refused, not ignored. */
const UNSUPPORTED_PARAMS = ['sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslcrldir', 'sslsni', 'sslcompression', 'sslcertmode', 'ssl_min_protocol_version', 'ssl_max_protocol_version', 'sslnegotiation'];

/**
 * libpq's sslmode, applied:
 * - disable (the default, as postgres.js's): no TLS.
 * - allow, prefer, require: encrypted, the server is not verified (any certificate, or
 *   for allow/prefer none at all): no defence against an active network attacker.
 * - verify-ca: the chain must lead to the CA (the host name is not checked).
 * - verify-full: the chain and the host name of DATABASE_URL.
 * The CA is DATABASE_CA_FILE or `sslrootcert=<path>` in the URL (`sslrootcert=system`:
 * the system's CAs); without either, verify-* use the system's CAs. A CA with no sslmode
 * means verify-full; with require, verify-ca (libpq's rule); with disable/allow/prefer it
 * is refused (it would verify nothing).
 */
export function postgresTls(databaseUrl: string, caFile?: string): PostgresTls {
  const q = databaseUrl.indexOf('?');
  const base = q === -1 ? databaseUrl : databaseUrl.slice(0, q);
  const params = new URLSearchParams(q === -1 ? '' : databaseUrl.slice(q + 1));
  for (const name of UNSUPPORTED_PARAMS) {
    if (params.has(name)) throw new TransportConfigError(`DATABASE_URL: ${name} is not supported (TLS settings read: sslmode, sslrootcert, DATABASE_CA_FILE)`);
  }
  if (params.has('ssl')) throw new TransportConfigError('DATABASE_URL: use sslmode=… (disable, require, verify-ca, verify-full), not ssl=…');
  const rawMode = params.get('sslmode');
  const rootCert = params.get('sslrootcert');
  params.delete('sslmode');
  params.delete('sslrootcert');
  const rest = params.toString();
  const url = rest ? `${base}?${rest}` : base;

  if (rawMode !== null && !(SSL_MODES as readonly string[]).includes(rawMode)) {
    throw new TransportConfigError(`DATABASE_URL: sslmode=${rawMode} is not one of ${SSL_MODES.join(', ')}`);
  }
  if (rootCert !== null && caFile !== undefined) {
    throw new TransportConfigError('DATABASE_URL names sslrootcert and DATABASE_CA_FILE is set: name the CA once');
  }
  const systemCa = rootCert === 'system';
  const caPath = caFile ?? (rootCert !== null && !systemCa ? rootCert : undefined);
  const caSetting = caFile !== undefined ? 'DATABASE_CA_FILE' : 'DATABASE_URL sslrootcert';
  const hasCa = caPath !== undefined || systemCa;

  let mode = (rawMode ?? (hasCa ? 'verify-full' : 'disable')) as SslMode;
  if (hasCa && (mode === 'disable' || mode === 'allow' || mode === 'prefer')) {
    throw new TransportConfigError(`${caSetting} is set but sslmode=${mode} verifies nothing: use sslmode=verify-full`);
  }
  if (systemCa && mode === 'require') {
    throw new TransportConfigError('DATABASE_URL: sslrootcert=system needs sslmode=verify-full or verify-ca');
  }
  if (mode === 'require' && hasCa) mode = 'verify-ca';

  if (mode === 'disable') return { url, ssl: false, mode };
  if (mode === 'allow' || mode === 'prefer' || mode === 'require') return { url, ssl: mode, mode };
  const ssl: ConnectionOptions = { rejectUnauthorized: true };
  if (caPath !== undefined) ssl.ca = readCaFile(caPath, caSetting);
  if (mode === 'verify-ca') {
    ssl.checkServerIdentity = () => undefined; // the chain only
  } else {
    // postgres.js hands tls.connect a socket and, for an IP address, no server name: Node
    // would then check the certificate against "localhost". Name the host it must carry.
    const hosts = urlHosts(base);
    if (hosts.length > 1) throw new TransportConfigError('DATABASE_URL: sslmode=verify-full takes one host (the name its certificate must carry)');
    if (hosts.length === 1) ssl.host = hosts[0];
  }
  return { url, ssl, mode };
}

/** The host names of a postgres:// URL's authority (several, comma-separated, for postgres.js's multi-host form). */
function urlHosts(base: string): string[] {
  const start = base.indexOf('://');
  if (start === -1) return [];
  let authority = base.slice(start + 3);
  const slash = authority.indexOf('/');
  if (slash !== -1) authority = authority.slice(0, slash);
  authority = authority.slice(authority.lastIndexOf('@') + 1);
  return authority
    .split(',')
    .map((h) => (h.startsWith('[') ? h.slice(1, h.indexOf(']')) : h.split(':')[0]!))
    .map((h) => decodeURIComponent(h))
    .filter((h) => h !== '');
}

export interface RedisTransport {
  /** ioredis's `tls` option (rediss:// only). */
  tls?: ConnectionOptions;
  /** From REDIS_PASSWORD or REDIS_PASSWORD_FILE; undefined: REDIS_URL's own, if any. */
  password?: string;
}

/**
 * rediss:// is TLS with the chain and the host name verified, against REDIS_CA_FILE when
 * it is set, else the system's CAs. A CA file with redis:// is refused (it would verify
 * nothing), as is a password given both in the URL and apart from it.
 */
export function redisTransport(redisUrl: string, opts: { caFile?: string; password?: string } = {}): RedisTransport {
  let parsed: URL;
  try {
    parsed = new URL(redisUrl);
  } catch {
    throw new TransportConfigError('REDIS_URL: not a redis:// or rediss:// URL');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new TransportConfigError('REDIS_URL: not a redis:// or rediss:// URL');
  const secure = parsed.protocol === 'rediss:';
  if (opts.caFile !== undefined && !secure) {
    throw new TransportConfigError('REDIS_CA_FILE is set but REDIS_URL is redis:// (no TLS): use rediss://');
  }
  if (opts.password !== undefined && parsed.password !== '') {
    throw new TransportConfigError('REDIS_URL holds a password and REDIS_PASSWORD or REDIS_PASSWORD_FILE is set: give it once (the file keeps it out of the URL)');
  }
  const out: RedisTransport = {};
  if (secure) out.tls = opts.caFile !== undefined ? { ca: readCaFile(opts.caFile, 'REDIS_CA_FILE') } : {};
  if (opts.password !== undefined) out.password = opts.password;
  return out;
}

/** OpenSSL's certificate verification failures, and Node's host name mismatch. */
const CERTIFICATE_ERRORS = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);

/** A refused server certificate: waiting and retrying cannot fix it, the configuration must change. */
export function isCertificateError(err: unknown): err is Error & { code: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CERTIFICATE_ERRORS.has(code);
}

/** One line for a refused certificate: what was refused, why, and which settings to check. */
export function certificateRefused(what: 'database' | 'redis', err: Error & { code: string }): string {
  const settings = what === 'database' ? 'DATABASE_CA_FILE (or sslrootcert) and the host name in DATABASE_URL' : 'REDIS_CA_FILE and the host name in REDIS_URL';
  const reason = err.message.replace(/\s+/g, ' ').trim();
  return `${what} TLS: the server's certificate was refused (${err.code}: ${reason}); check ${settings}`;
}
