// Machine access tokens: JWTs (HS256, jose) signed with a key derived from AUTH_SECRET.
// Each token type has its own derived key, so a token of one kind can never be
// presented as another.
import { createHmac, hkdfSync, timingSafeEqual, webcrypto } from 'node:crypto';
import { SignJWT, decodeJwt, errors, jwtVerify } from 'jose';
import { AppError } from '../errors.js';

const ISSUER = 'vault-standalone';

/** The methods other than Universal Auth that issue access tokens (named in the token's claims). */
export const ISSUING_METHODS = ['jwt-auth', 'oidc-auth', 'kubernetes-auth', 'token-auth'] as const;
export type IssuedByMethod = (typeof ISSUING_METHODS)[number];
const IDENTITY_TOKEN_TYPE = 'identityAccessToken';

export interface IdentityTokenClaims {
  identityId: string;
  /** '' for a token of JWT or OIDC auth. */
  clientSecretId: string;
  /** The method that issued the token (absent from Universal Auth tokens). */
  authMethod?: IssuedByMethod;
  tokenId: string;
  /** Seconds since the epoch. */
  exp: number;
}

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

export function identityTokens(authSecret: Buffer) {
  const key = signingKey(authSecret, IDENTITY_TOKEN_TYPE);

  return {
    async sign(c: IdentityTokenClaims): Promise<string> {
      const method = c.authMethod ? { authMethod: c.authMethod } : {};
      return new SignJWT({ authTokenType: IDENTITY_TOKEN_TYPE, identityId: c.identityId, clientSecretId: c.clientSecretId, ...method })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(c.identityId)
        .setJti(c.tokenId)
        .setIssuedAt()
        .setExpirationTime(c.exp)
        .sign(await key);
    },

    /** Throws AppError TOKEN_INVALID for anything but a well-formed, unexpired token of ours. */
    async verify(token: string): Promise<IdentityTokenClaims> {
      try {
        const { payload } = await jwtVerify(token, await key, { algorithms: ['HS256'], issuer: ISSUER, typ: 'JWT' });
        const { identityId, clientSecretId, jti, exp, authTokenType, authMethod } = payload as Record<string, unknown>;
        if (
          authTokenType !== IDENTITY_TOKEN_TYPE ||
          (authMethod !== undefined && !ISSUING_METHODS.includes(authMethod as IssuedByMethod)) ||
          typeof identityId !== 'string' ||
          typeof clientSecretId !== 'string' ||
          typeof jti !== 'string' ||
          typeof exp !== 'number'
        ) {
          throw new AppError('TOKEN_INVALID', 'Invalid access token');
        }
        return authMethod === undefined
          ? { identityId, clientSecretId, tokenId: jti, exp }
          : { identityId, clientSecretId, authMethod: authMethod as IssuedByMethod, tokenId: jti, exp };
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

export function userSessionTokens(authSecret: Buffer) {
  const key = signingKey(authSecret, USER_SESSION_TYPE);
  const csrfKey = deriveKey(authSecret, 'csrf');

  const csrfTokenFor = (sessionId: string) => createHmac('sha256', csrfKey).update(sessionId).digest('base64url');

  return {
    async sign(c: UserSessionClaims): Promise<string> {
      return new SignJWT({ authTokenType: USER_SESSION_TYPE, userId: c.userId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setSubject(c.userId)
        .setJti(c.sessionId)
        .setIssuedAt()
        .setExpirationTime(c.exp)
        .sign(await key);
    },

    async verify(token: string): Promise<UserSessionClaims> {
      try {
        const { payload } = await jwtVerify(token, await key, { algorithms: ['HS256'], issuer: ISSUER, typ: 'JWT' });
        const { userId, jti, exp, authTokenType } = payload as Record<string, unknown>;
        if (authTokenType !== USER_SESSION_TYPE || typeof userId !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') {
          throw new AppError('TOKEN_INVALID', 'Invalid session token');
        }
        return { userId, sessionId: jti, exp };
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
 * Names an e-mail address in the login-attempt table without storing it: addresses
 * that belong to nobody are whatever strangers typed, and a keyed hash cannot be
 * reversed by trying candidate addresses without AUTH_SECRET.
 */
export function loginAttemptKeys(authSecret: Buffer): (normalisedEmail: string) => Buffer {
  const key = deriveKey(authSecret, 'login-attempts');
  return (normalisedEmail) => createHmac('sha256', key).update(normalisedEmail, 'utf8').digest();
}

/** Everything AUTH_SECRET is used for, derived at once. */
export interface AuthKeys {
  identity: IdentityTokens;
  sessions: UserSessionTokens;
  loginAttempts: (normalisedEmail: string) => Buffer;
}

/**
 * Derives every per-purpose key from AUTH_SECRET, then zeroes the caller's bytes: from
 * here on only the derived keys exist (each signs or MACs one kind of thing), and the
 * secret itself is held nowhere in the process.
 */
export function deriveAuthKeys(authSecret: Buffer): AuthKeys {
  try {
    return { identity: identityTokens(authSecret), sessions: userSessionTokens(authSecret), loginAttempts: loginAttemptKeys(authSecret) };
  } finally {
    authSecret.fill(0);
  }
}
