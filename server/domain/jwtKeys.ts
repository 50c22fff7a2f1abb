// Where JWT and OIDC auth find the keys that sign identity tokens, and the signature
// check itself. Remote material (a JWKS, an OIDC discovery document) is fetched with a
// deadline and a size cap, never following redirects, and cached with a bounded
// refresh: a JWKS is reloaded when it is older than `cacheMaxAgeMs`, or when a token
// names an unknown key and the last reload is older than `cooldownMs` (so a flood of
// tokens with made-up key ids costs at most one fetch per cooldown); a discovery
// document is kept `cacheMaxAgeMs`, and a failed fetch is not retried for `cooldownMs`.
//
// A key source that cannot be read is a fault, not a verdict on the token: the login is
// refused with 503 (retry), never accepted and never answered as bad credentials.
//
// Every fetch follows server/domain/fetchGuard.ts: no link-local or metadata address
// (checked on the URL and on each resolved address at connect time), loopback only when
// the URL names it, and a discovery document's jwks_uri on the document's own origin
// (or one in OIDC_JWKS_ALLOWED_ORIGINS), never https → http. A refused fetch answers
// the login as an unreachable source does (503) and logs why, once per fetch attempt.
import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AppError } from '../errors.js';
import { FetchRefused, guardedLookup, hostRefusal, jwksUriRefusal, type Resolve } from './fetchGuard.js';

/** Asymmetric algorithms only: 'none' and the HMAC family (HS*) are refused before any key is chosen. */
export const ALLOWED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** How far `exp`, `nbf` and `iat` may be off from this clock. */
export const CLOCK_SKEW_SECONDS = 30;
/** A JWKS or discovery document larger than this is refused. */
export const MAX_DOCUMENT_BYTES = 256 * 1024;

export interface KeySourceOptions {
  /** The deadline of one fetch (connect, headers and body). */
  timeoutMs: number;
  cacheMaxAgeMs: number;
  cooldownMs: number;
  /** JWKS sets and discovery documents held (each); the oldest used leaves first. */
  maxSources: number;
  /** Origins a discovery document's jwks_uri may name besides its own (OIDC_JWKS_ALLOWED_ORIGINS). */
  jwksAllowedOrigins: readonly string[];
  /** Name resolution (tests: a made-up DNS); the system resolver otherwise. */
  resolve?: Resolve;
  /** Where a refused fetch is reported (the service's log). */
  log?: (fields: Record<string, unknown>, message: string) => void;
  /** The clock a token's exp, nbf and iat are checked by: the database's (storage/clock.ts), with CLOCK_SKEW_SECONDS for the issuer's. */
  now?: () => number;
}

export const DEFAULT_KEY_SOURCE_OPTIONS: KeySourceOptions = {
  timeoutMs: 3000,
  cacheMaxAgeMs: 600_000,
  cooldownMs: 30_000,
  maxSources: 500,
  jwksAllowedOrigins: [],
};

/** A key source that could not be read (network, deadline, status, size, not JSON). */
export class KeySourceUnavailable extends Error {
  constructor(what: string) {
    super(what);
    this.name = 'KeySourceUnavailable';
  }
}

/** A fetch the rules of fetchGuard.ts refused: answered as unavailable, logged with its reason. */
export class KeySourceRefused extends KeySourceUnavailable {
  constructor(what: string) {
    super(what);
    this.name = 'KeySourceRefused';
  }
}

const unavailable = (what: string) =>
  new AppError('UNAVAILABLE', `Access denied for now: ${what} could not be read; retry shortly`, { headers: { 'Retry-After': '5' } });
const denied = (why: string) => new AppError('UNAUTHORIZED', `Access denied: ${why}`);

/** An http(s) URL without credentials; undefined otherwise. */
export function parseFetchUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.hash) return undefined;
  return url;
}

/** A PEM certificate (chain) usable as `ca`; false if it does not parse. */
export function isCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}

/** A PEM public key of an asymmetric type jose verifies with; undefined otherwise (private keys refused). */
export function parsePublicKey(pem: string): KeyObject | undefined {
  if (/PRIVATE KEY/.test(pem)) return undefined;
  try {
    const key = createPublicKey(pem);
    return key.type === 'public' && ['rsa', 'rsa-pss', 'ec', 'ed25519', 'ed448'].includes(key.asymmetricKeyType ?? '') ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * GET `url` for a 200 JSON answer, within `timeoutMs` overall; throws KeySourceUnavailable
 * (KeySourceRefused when fetchGuard's rules refuse the host or what it resolves to).
 */
export function fetchJson(url: URL, opts: { ca?: string; timeoutMs: number; signal?: AbortSignal; resolve?: Resolve }): Promise<unknown> {
  const refused = hostRefusal(url);
  if (refused) return Promise.reject(new KeySourceRefused(refused));
  return new Promise((resolve, reject) => {
    const fail = (why: string | KeySourceUnavailable) => {
      clearTimeout(timer);
      req.destroy();
      reject(typeof why === 'string' ? new KeySourceUnavailable(why) : why);
    };
    const options = {
      method: 'GET',
      headers: { accept: 'application/json, application/jwk-set+json' },
      signal: opts.signal,
      // A connection of its own (no pooled socket): each fetch resolves the name again and
      // checks every address at connect time (an IP literal was checked above).
      agent: false,
      lookup: guardedLookup(url, opts.resolve),
    };
    const onResponse = (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        return fail(`answered ${res.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_DOCUMENT_BYTES) fail(`larger than ${MAX_DOCUMENT_BYTES} bytes`);
        else chunks.push(c);
      });
      res.on('error', () => fail('connection failed'));
      res.on('end', () => {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new KeySourceUnavailable('not JSON'));
        }
      });
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ...(opts.ca ? { ca: opts.ca } : {}) }, onResponse)
        : httpRequest(url, options, onResponse);
    const timer = setTimeout(() => fail(`no answer within ${opts.timeoutMs} ms`), opts.timeoutMs);
    req.on('error', (err) => fail(err instanceof FetchRefused ? new KeySourceRefused(err.message) : 'connection failed'));
    req.end();
  });
}

interface Discovery {
  issuer: string;
  jwksUri: URL;
}

/** Insertion-ordered map used as a bounded cache: a hit moves to the end, the first entry leaves when full. */
function bounded<V>(max: number) {
  const m = new Map<string, V>();
  return {
    get(k: string): V | undefined {
      const v = m.get(k);
      if (v !== undefined) {
        m.delete(k);
        m.set(k, v);
      }
      return v;
    },
    set(k: string, v: V) {
      m.delete(k);
      if (m.size >= max) m.delete(m.keys().next().value!);
      m.set(k, v);
    },
    delete: (k: string) => m.delete(k),
    get size() {
      return m.size;
    },
  };
}

export function keySources(options: Partial<KeySourceOptions> = {}) {
  const o = { ...DEFAULT_KEY_SOURCE_OPTIONS, ...options };
  const jwksSets = bounded<JWTVerifyGetKey>(o.maxSources);
  const discoveries = bounded<{ doc?: Discovery; failed?: string; until: number }>(o.maxSources);
  const pending = new Map<string, Promise<Discovery>>();
  let fetches = 0;

  /** fetchJson, with a refusal logged (why, and where: origin and path, never a query). */
  async function fetchChecked(url: URL, what: string, ca: string, signal?: AbortSignal): Promise<unknown> {
    fetches++;
    try {
      return await fetchJson(url, { ca: ca || undefined, timeoutMs: o.timeoutMs, signal, resolve: o.resolve });
    } catch (err) {
      if (err instanceof KeySourceRefused) refusedFetch(what, url, err.message);
      throw err;
    }
  }

  function refusedFetch(what: string, url: URL, reason: string): void {
    o.log?.({ event: 'jwt-key-source-refused', source: what, url: `${url.origin}${url.pathname}`, reason }, `${what}: fetch of ${url.origin}${url.pathname} refused: ${reason}`);
  }

  function jwksSet(url: URL, ca: string): JWTVerifyGetKey {
    const key = `${url.href}\n${ca}`;
    let set = jwksSets.get(key);
    if (!set) {
      set = createRemoteJWKSet(url, {
        timeoutDuration: o.timeoutMs,
        cacheMaxAge: o.cacheMaxAgeMs,
        cooldownDuration: o.cooldownMs,
        [customFetch]: async (input: string | URL, init: { signal?: AbortSignal }) => Response.json(await fetchChecked(new URL(String(input)), 'JWKS', ca, init.signal)),
      });
      jwksSets.set(key, set);
    }
    return set;
  }

  async function fetchDiscovery(base: string, ca: string): Promise<Discovery> {
    const url = parseFetchUrl(`${base.replace(/\/+$/, '')}/.well-known/openid-configuration`);
    if (!url) throw new KeySourceUnavailable('not an http(s) URL');
    const doc = (await fetchChecked(url, 'OIDC discovery document', ca)) as { issuer?: unknown; jwks_uri?: unknown } | null;
    const jwksUri = typeof doc?.jwks_uri === 'string' ? parseFetchUrl(doc.jwks_uri) : undefined;
    if (!jwksUri || typeof doc?.issuer !== 'string') throw new KeySourceUnavailable('no issuer or jwks_uri');
    // The document is the issuer's word, not the operator's: it may not send the key fetch elsewhere.
    const refused = jwksUriRefusal(url, jwksUri, o.jwksAllowedOrigins);
    if (refused) {
      refusedFetch('OIDC discovery document', url, refused);
      throw new KeySourceRefused(refused);
    }
    return { issuer: doc.issuer, jwksUri };
  }

  /** The discovery document, cached; concurrent logins share one fetch. */
  async function discovery(base: string, ca: string): Promise<Discovery> {
    const key = `${base}\n${ca}`;
    const hit = discoveries.get(key);
    if (hit && hit.until > Date.now()) {
      if (hit.doc) return hit.doc;
      throw new KeySourceUnavailable(hit.failed!);
    }
    let p = pending.get(key);
    if (!p) {
      p = fetchDiscovery(base, ca).then(
        (doc) => {
          discoveries.set(key, { doc, until: Date.now() + o.cacheMaxAgeMs });
          return doc;
        },
        (err: unknown) => {
          discoveries.set(key, { failed: err instanceof Error ? err.message : 'failed', until: Date.now() + o.cooldownMs });
          throw err;
        },
      );
      p.finally(() => pending.delete(key)).catch(() => {});
      pending.set(key, p);
    }
    return p;
  }

  const now = o.now ?? Date.now;
  const verifyOptions = () => ({ algorithms: ALLOWED_ALGORITHMS, clockTolerance: CLOCK_SKEW_SECONDS, requiredClaims: ['exp'], currentDate: new Date(now()) });

  /** One verification; jose's errors mapped to 401 (the token) or 503 (the key source). */
  async function verifyWith(jwt: string, key: KeyObject | JWTVerifyGetKey, source: string): Promise<JWTPayload> {
    try {
      const { payload } = typeof key === 'function' ? await jwtVerify(jwt, key, verifyOptions()) : await jwtVerify(jwt, key, verifyOptions());
      return payload;
    } catch (err) {
      throw mapError(err, source);
    }
  }

  function mapError(err: unknown, source: string): AppError {
    if (err instanceof AppError) return err;
    if (err instanceof KeySourceUnavailable || err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) return unavailable(source);
    if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return denied('no key of the issuer matches the token');
    if (err instanceof errors.JWTExpired) return denied('jwt expired');
    if (err instanceof errors.JWTClaimValidationFailed) return denied(err.claim === 'nbf' ? 'jwt not active' : `the ${err.claim} claim is invalid`);
    if (err instanceof errors.JOSEAlgNotAllowed) return denied('the token is not signed with an allowed algorithm');
    if (err instanceof errors.JWSSignatureVerificationFailed) return denied('invalid signature');
    // Malformed tokens, key types that do not fit the algorithm, unsupported headers.
    return denied('invalid JWT');
  }

  /** The header must name an allowed algorithm before any key is looked up or fetched. */
  function checkHeader(jwt: string): void {
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(jwt).alg;
    } catch {
      throw denied('invalid JWT');
    }
    if (typeof alg !== 'string' || !ALLOWED_ALGORITHMS.includes(alg)) {
      throw denied(`the token is not signed with an allowed algorithm (${ALLOWED_ALGORITHMS.join(', ')})`);
    }
  }

  return {
    /** Verified against each static key in turn (Infisical's order); the first that verifies wins. */
    async verifyStatic(jwt: string, publicKeys: string[]): Promise<JWTPayload> {
      checkHeader(jwt);
      let last: unknown;
      for (const pem of publicKeys) {
        const key = parsePublicKey(pem);
        if (!key) continue;
        try {
          return (await jwtVerify(jwt, key, verifyOptions())).payload;
        } catch (err) {
          last = err;
          // Only a key that does not fit (signature, key type) sends us to the next one:
          // a claim that failed (expired, not yet valid) fails with every key.
          const wrongKey = err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JOSENotSupported || err instanceof TypeError;
          if (!wrongKey) throw mapError(err, 'the public key');
        }
      }
      throw last instanceof errors.JWSSignatureVerificationFailed || last === undefined ? denied('invalid signature') : mapError(last, 'the public key');
    },

    async verifyJwks(jwt: string, jwksUrl: string, ca: string): Promise<JWTPayload> {
      checkHeader(jwt);
      const url = parseFetchUrl(jwksUrl);
      if (!url) throw unavailable('the JWKS');
      return verifyWith(jwt, jwksSet(url, ca), 'the JWKS');
    },

    /** Also returns the provider's issuer (the token's `iss` must name it when no issuer is bound). */
    async verifyOidc(jwt: string, discoveryUrl: string, ca: string): Promise<{ payload: JWTPayload; issuer: string }> {
      checkHeader(jwt);
      let doc: Discovery;
      try {
        doc = await discovery(discoveryUrl, ca);
      } catch (err) {
        throw mapError(err, 'the OIDC discovery document');
      }
      return { payload: await verifyWith(jwt, jwksSet(doc.jwksUri, ca), 'the JWKS'), issuer: doc.issuer };
    },

    /** Fetches made so far (tests: refresh and cooldown bounds). */
    get fetches(): number {
      return fetches;
    },
    get sizes(): { jwks: number; discovery: number } {
      return { jwks: jwksSets.size, discovery: discoveries.size };
    },
  };
}
export type KeySources = ReturnType<typeof keySources>;
