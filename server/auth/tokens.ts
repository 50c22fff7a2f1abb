// Machine access tokens: JWTs (HS256, jose) signed with a key derived from AUTH_SECRET.
// Each token type has its own derived key, so a token of one kind can never be
// presented as another.
//
// Every token (access token and session) carries a random secret part (256 bits, claim
// `tokenSecret`) besides the id of its row; the database keeps only the secret's SHA-256.
// So neither AUTH_SECRET nor a read of the database (nor both) can make a working token:
// the row id is not a credential, and a forged token's secret matches no stored hash.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual, webcrypto } from 'node:crypto';
import { SignJWT, decodeJwt, errors, jwtVerify } from 'jose';
import { AppError } from '../errors.js';

const ISSUER = 'vault-standalone';

/** The methods other than Universal Auth that issue access tokens (named in the token's claims). */
export const ISSUING_METHODS = ['jwt-auth', 'oidc-auth', 'kubernetes-auth', 'token-auth'] as const;
export type IssuedByMethod = (typeof ISSUING_METHODS)[number];
const IDENTITY_TOKEN_TYPE = 'identityAccessToken';

/** A token's row id (jti): a uuid, as the rows are keyed (anything else names no row). */
const ROW_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A token's secret part: 32 random bytes, base64url (43 characters). */
const TOKEN_SECRET = /^[A-Za-z0-9_-]{43}$/;

/** The stored form of a token's secret part: SHA-256 (the secret is 256 random bits, so a fast hash is enough). */
export function hashTokenSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** A new token's secret part and the hash its row keeps. */
export function newTokenSecret(): { secret: string; secretHash: Buffer } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, secretHash: hashTokenSecret(secret) };
}

/** Whether a presented secret's hash (made once, when its token was verified) matches the row's: constant time. */
export function secretMatches(presentedHash: Buffer, stored: Buffer | null | undefined): boolean {
  return stored != null && stored.length === presentedHash.length && timingSafeEqual(stored, presentedHash);
}

export interface IdentityTokenClaims {
  identityId: string;
  /** '' for a token of JWT or OIDC auth. */
  clientSecretId: string;
  /** The method that issued the token (absent from Universal Auth tokens). */
  authMethod?: IssuedByMethod;
  tokenId: string;
  /** The token's secret part (see newTokenSecret); only its hash is stored. */
  secret: string;
  /** Seconds since the epoch. */
  exp: number;
}

/** Claims as verified: with the secret's hash, made once per verification, compared per request. */
export type VerifiedIdentityClaims = IdentityTokenClaims & { secretHash: Buffer };

function deriveKey(authSecret: Buffer, purpose: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', authSecret, Buffer.alloc(0), `vault-standalone/${purpose}/v1`, 32));
}

/**
 * The HS256 key as a non-extractable CryptoKey, imported once: given raw bytes, jose
 * imports a new CryptoKey on every sign and verify (a few % of a login's CPU). The
 * bytes are zeroed once imported.
 */
function signingKey(authSecret: Buffer, purpose: string): Promise<webcrypto.CryptoKey> {
  const raw = deriveKey(authSecret, purpose);
  const imported = webcrypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  return imported.finally(() => raw.fill(0));
}

/** `now`: the clock a token is issued (iat) and checked (exp) by: the database's (storage/clock.ts). */
export type Clock = () => number;

const seconds = (now: Clock) => Math.floor(now() / 1000);

export function identityTokens(authSecret: Buffer, now: Clock = Date.now) {
  const key = signingKey(authSecret, IDENTITY_TOKEN_TYPE);

  return {
    async sign(c: IdentityTokenClaims): Promise<string> {
      const method = c.authMethod ? { authMethod: c.authMethod } : {};
      return new SignJWT({ authTokenType: IDENTITY_TOKEN_TYPE, identityId: c.identityId, clientSecretId: c.clientSecretId, ...method, tokenSecret: c.secret })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(c.identityId)
        .setJti(c.tokenId)
        .setIssuedAt(seconds(now))
        .setExpirationTime(c.exp)
        .sign(await key);
    },

    /** Throws AppError TOKEN_INVALID for anything but a well-formed, unexpired token of ours. */
    async verify(token: string): Promise<VerifiedIdentityClaims> {
      try {
        const { payload } = await jwtVerify(token, await key, { algorithms: ['HS256'], issuer: ISSUER, typ: 'JWT', currentDate: new Date(now()) });
        const { identityId, clientSecretId, jti, exp, authTokenType, authMethod, tokenSecret } = payload as Record<string, unknown>;
        if (
          authTokenType !== IDENTITY_TOKEN_TYPE ||
          (authMethod !== undefined && !ISSUING_METHODS.includes(authMethod as IssuedByMethod)) ||
          typeof identityId !== 'string' ||
          typeof clientSecretId !== 'string' ||
          typeof jti !== 'string' ||
          !ROW_ID.test(jti) ||
          typeof exp !== 'number' ||
          // A token issued before tokens had a secret part: refused (its holder logs in again).
          typeof tokenSecret !== 'string' ||
          !TOKEN_SECRET.test(tokenSecret)
        ) {
          throw new AppError('TOKEN_INVALID', 'Invalid access token');
        }
        const claims = { identityId, clientSecretId, tokenId: jti, secret: tokenSecret, secretHash: hashTokenSecret(tokenSecret), exp };
        return authMethod === undefined ? claims : { ...claims, authMethod: authMethod as IssuedByMethod };
      } catch (err) {
        if (err instanceof AppError) throw err;
        if (err instanceof errors.JWTExpired) throw new AppError('TOKEN_INVALID', 'Access token expired');
        throw new AppError('TOKEN_INVALID', 'Invalid access token');
      }
    },
  };
}
export type IdentityTokens = ReturnType<typeof identityTokens>;

const USER_SESSION_TYPE = 'userSession';

export interface UserSessionClaims {
  userId: string;
  sessionId: string;
  /** The session's secret part (see newTokenSecret); only its hash is stored. */
  secret: string;
  exp: number;
}

/** Which verifier a bearer token is for; unverified, so only ever used to choose one. */
export function tokenTypeOf(token: string): 'identityAccessToken' | 'userSession' | undefined {
  try {
    const t = decodeJwt(token).authTokenType;
    return t === IDENTITY_TOKEN_TYPE || t === USER_SESSION_TYPE ? t : undefined;
  } catch {
    return undefined;
  }
}

export function userSessionTokens(authSecret: Buffer, now: Clock = Date.now) {
  const key = signingKey(authSecret, USER_SESSION_TYPE);
  const csrfKey = deriveKey(authSecret, 'csrf');

  const csrfTokenFor = (sessionId: string) => createHmac('sha256', csrfKey).update(sessionId).digest('base64url');

  return {
    async sign(c: UserSessionClaims): Promise<string> {
      return new SignJWT({ authTokenType: USER_SESSION_TYPE, userId: c.userId, tokenSecret: c.secret })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(c.userId)
        .setJti(c.sessionId)
        .setIssuedAt(seconds(now))
        .setExpirationTime(c.exp)
        .sign(await key);
    },

    async verify(token: string): Promise<UserSessionClaims & { secretHash: Buffer }> {
      try {
        const { payload } = await jwtVerify(token, await key, { algorithms: ['HS256'], issuer: ISSUER, typ: 'JWT', currentDate: new Date(now()) });
        const { userId, jti, exp, authTokenType, tokenSecret } = payload as Record<string, unknown>;
        if (
          authTokenType !== USER_SESSION_TYPE ||
          typeof userId !== 'string' ||
          typeof jti !== 'string' ||
          !ROW_ID.test(jti) ||
          typeof exp !== 'number' ||
          typeof tokenSecret !== 'string' ||
          !TOKEN_SECRET.test(tokenSecret)
        ) {
          throw new AppError('TOKEN_INVALID', 'Invalid session token');
        }
        return { userId, sessionId: jti, secret: tokenSecret, secretHash: hashTokenSecret(tokenSecret), exp };
      } catch (err) {
        if (err instanceof AppError) throw err;
        if (err instanceof errors.JWTExpired) throw new AppError('TOKEN_INVALID', 'Session expired');
        throw new AppError('TOKEN_INVALID', 'Invalid session token');
      }
    },

    /** Bound to the session: a page of another origin can neither read nor forge it. */
    csrfTokenFor,
    checkCsrf(sessionId: string, presented: string | undefined): boolean {
      if (!presented) return false;
      const a = Buffer.from(csrfTokenFor(sessionId));
      const b = Buffer.from(presented);
      return a.length === b.length && timingSafeEqual(a, b);
    },
  };
}
export type UserSessionTokens = ReturnType<typeof userSessionTokens>;

/**
 * Names an (e-mail address, source) pair in the login-attempt table without storing
 * either: addresses that belong to nobody are whatever strangers typed, and a keyed hash
 * cannot be reversed by trying candidates without AUTH_SECRET. `source` (loginSources.ts)
 * never holds a newline, so the pair is read back unambiguously from the last one.
 */
export function loginAttemptKeys(authSecret: Buffer): (normalisedEmail: string, source: string) => Buffer {
  const key = deriveKey(authSecret, 'login-attempts');
  return (normalisedEmail, source) => createHmac('sha256', key).update(`${normalisedEmail}\n${source}`, 'utf8').digest();
}

/** Everything AUTH_SECRET is used for, derived at once. */
export interface AuthKeys {
  identity: IdentityTokens;
  sessions: UserSessionTokens;
  loginAttempts: (normalisedEmail: string, source: string) => Buffer;
  /** The first visit's setup code when SETUP_TOKEN is unset (see setupCodeFrom). */
  setupCode: string;
}

/**
 * The first visit's setup code derived from AUTH_SECRET (HKDF, its own purpose): every
 * replica and every restart of one instance has the same code, nothing in a chart's values
 * or a rendered manifest predicts it, and it reveals nothing of AUTH_SECRET. Whoever holds
 * AUTH_SECRET can read it (`vault-standalone setup-code`), and already controls the
 * instance anyway. 128 bits, as lowercase hex in groups of four.
 */
export function setupCodeFrom(authSecret: Buffer): string {
  const raw = Buffer.from(deriveKey(authSecret, 'first-visit-setup-code').subarray(0, 16));
  try {
    return raw.toString('hex').match(/.{4}/g)!.join('-');
  } finally {
    raw.fill(0);
  }
}

/**
 * Derives every per-purpose key from AUTH_SECRET, then zeroes the caller's bytes: from
 * here on only the derived keys exist (each signs or MACs one kind of thing), and the
 * secret itself is held nowhere in the process.
 */
export function deriveAuthKeys(authSecret: Buffer, now: Clock = Date.now): AuthKeys {
  try {
    return {
      identity: identityTokens(authSecret, now),
      sessions: userSessionTokens(authSecret, now),
      loginAttempts: loginAttemptKeys(authSecret),
      setupCode: setupCodeFrom(authSecret),
    };
  } finally {
    authSecret.fill(0);
  }
}
