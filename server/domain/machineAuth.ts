// Universal Auth: client credentials in, a revocable access token out; and the
// authentication of every machine request that carries one.
import { randomUUID } from 'node:crypto';
import type { Store } from '../../storage/index.js';
import type { AccessTokenState, TrustedIp } from '../../storage/identities.js';
import { hashTokenSecret, newTokenSecret, secretMatches, type IdentityTokenClaims, type IdentityTokens, type IssuedByMethod, type VerifiedIdentityClaims } from '../auth/tokens.js';
import { AppError } from '../errors.js';
import { loginSource } from '../auth/loginSources.js';
import { ipMatcher } from '../http/clientAddress.js';
import { isUuid } from './access.js';
import { topics, type Caches } from './caches.js';
import type { Keyring } from './keyring.js';
import type { Origin, WritePipeline } from './pipeline.js';

export interface IdentityActor {
  kind: 'identity';
  identityId: string;
  tokenId: string;
  clientSecretId: string;
}

export interface LoginResult {
  accessToken: string;
  expiresIn: number;
  accessTokenMaxTTL: number;
  tokenType: 'Bearer';
}

const invalidCredentials = () => new AppError('UNAUTHORIZED', 'Invalid credentials');
/** Infisical's answer (403) when a trusted-IP list does not hold the caller's address. */
const ipNotAllowed = () => new AppError('FORBIDDEN', 'You are not allowed to access this resource from the current IP address');
/** Infisical's answer (401) for a token whose uses are exhausted. */
const usesExhausted = () => new AppError('UNAUTHORIZED', 'Unable to renew because access token number of uses limit reached');

/**
 * One matcher per list as loaded (rows and cached token states are never mutated), built
 * only for a list that does not admit every address: each login's claim and each new
 * token's state bring their own copy of the list, and a BlockList costs ~20 µs to build.
 */
const matchers = new WeakMap<TrustedIp[], { admitsEvery: boolean; match?: ReturnType<typeof ipMatcher> }>();
/** `ip` is asked only when the list does not admit every address (Infisical's default list does). */
function ipAllowed(list: TrustedIp[], ip: () => string | null | undefined): boolean {
  let m = matchers.get(list);
  if (!m) {
    const admitsAll = (type: TrustedIp['type']) => list.some((r) => r.type === type && r.prefix === 0);
    matchers.set(list, (m = { admitsEvery: admitsAll('ipv4') && admitsAll('ipv6') }));
  }
  if (m.admitsEvery) return true;
  const address = ip();
  // An unknown address (no socket address) passes only a list that admits every address.
  if (!address) return list.some((r) => r.type === 'ipv6' && r.prefix === 0);
  return (m.match ??= ipMatcher(list))(address);
}

type TokenClaims = { tokenId: string; identityId: string; clientSecretId: string; authMethod?: string; secretHash: Buffer };

/** A new access token's row id and secret part: the row keeps `secretHash`, the token carries `secret`. */
export function newAccessToken(): { tokenId: string; secret: string; secretHash: Buffer } {
  return { tokenId: randomUUID(), ...newTokenSecret() };
}

/** What issue() signs: a token whose row the caller has inserted (or is inserting) with the secret's hash. */
export interface IssuedToken {
  identityId: string;
  /** '' for a token that no client secret issued. */
  clientSecretId: string;
  tokenId: string;
  secret: string;
  /** Milliseconds: `expiresIn` counts from here. */
  issuedAt: number;
  expiresAt: number;
  /** Seconds, as answered in `accessTokenMaxTTL`. */
  maxTtl: number;
  authMethod?: IssuedByMethod;
}

/** What issue() signs for a login by a method other than Universal Auth, under its settings' TTLs. */
export function methodToken(
  identityId: string,
  token: { tokenId: string; secret: string },
  issuedAt: number,
  settings: { accessTokenTtl: number; accessTokenMaxTtl: number },
  authMethod: IssuedByMethod,
): IssuedToken {
  return { identityId, clientSecretId: '', ...token, issuedAt, expiresAt: issuedAt + settings.accessTokenTtl * 1000, maxTtl: settings.accessTokenMaxTtl, authMethod };
}

/** The longest Authorization header worth remembering by its text ("Bearer", spaces, a 4,096-character token). */
export const MAX_BEARER_HEADER = 4200;
/** See claimsOf: 10,000 entries of ~1 KB. */
export const VERIFIED_MAX = 10_000;
export const VERIFIED_TTL_MS = 60_000;
/** And at most this many estimated bytes (the key's characters plus ~700 B of claims each): 10,000 headers of 4,200 characters would be ~50 MB. */
export const VERIFIED_MAX_BYTES = 16 * 1024 * 1024;
const VERIFIED_ENTRY_BYTES = 700;

export interface MachineAuthDeps {
  store: {
    identities: Pick<
      Store['identities'],
      'loginLookup' | 'universalAuthByIdentity' | 'liveAccessToken' | 'revokedAccessToken'
    >;
  };
  keyring: Pick<Keyring, 'macWith' | 'findClientSecret'>;
  tokens: IdentityTokens;
  caches: Pick<Caches, 'accessTokens' | 'logins'>;
  changes: Pick<WritePipeline, 'byCaller' | 'groupedByCaller'>;
  lockout: { maxAttempts: number; seconds: number };
  now?: () => number;
}

export function machineAuth(deps: MachineAuthDeps) {
  const { store, keyring, tokens, caches, changes, lockout } = deps;
  const asIdentity = (identityId: string, origin?: Origin) => changes.byCaller({ actorType: 'identity', actorId: identityId }, origin);
  // Logins and revocations (ESO's every sync) are committed in groups (see the pipeline):
  // an identity's logins one after another (they claim its attempt counter), a token's
  // revocation beside them.
  const asIdentityGrouped = (identityId: string, key: string, origin?: Origin) =>
    changes.groupedByCaller({ actorType: 'identity', actorId: identityId }, origin ?? {}, key);
  const now = deps.now ?? Date.now;
  // Verified JWTs by their exact text: claims are immutable, so only expiry and
  // liveness (checked per request) can change. An entry (~1 KB: the token's text and
  // claims) is kept VERIFIED_TTL_MS: a sync's requests reuse it, and an HS256 check is
  // ~20 µs when it is gone. Bounded, oldest evicted first; swept with the caches.
  // Keyed by the token, or (authenticate) by the whole Authorization header that carries
  // it: a hit then skips parsing the header (~2 µs a request for a regex over the token
  // and hashing the token's substring). No token holds a space, so the two never meet.
  const verified = new Map<string, { claims: VerifiedIdentityClaims; until: number }>();
  let verifiedBytes = 0;
  const forget = (key: string) => {
    if (verified.delete(key)) verifiedBytes -= key.length + VERIFIED_ENTRY_BYTES;
  };

  /** `isHeader`: `key` is an Authorization header, parsed only when it is not held. */
  async function claimsOf(key: string, isHeader = false) {
    // A bare token (revoke, renew) was most likely verified under the header that carried
    // it in a read just before (ESO's cycle: login, read, revoke).
    const hit = verified.get(key) ?? (isHeader ? undefined : verified.get(`Bearer ${key}`));
    let claims = hit !== undefined && hit.until > now() ? hit.claims : undefined;
    if (!claims) {
      claims = await tokens.verify(isHeader ? bearerToken(key) : key);
      keep(key, claims);
    }
    return unexpired(key, claims);
  }

  function unexpired(key: string, claims: VerifiedIdentityClaims): VerifiedIdentityClaims {
    if (claims.exp * 1000 <= now()) {
      forget(key);
      throw new AppError('TOKEN_INVALID', 'Access token expired');
    }
    return claims;
  }

  /** The claims verified under this Authorization header, if held (no promise: the hot path); else claimsOf. */
  function heldClaims(authorization: string): VerifiedIdentityClaims | undefined {
    const hit = verified.get(authorization);
    return hit !== undefined && hit.until > now() ? unexpired(authorization, hit.claims) : undefined;
  }

  function keep(key: string, claims: VerifiedIdentityClaims): void {
    forget(key);
    const bytes = key.length + VERIFIED_ENTRY_BYTES;
    while (verified.size > 0 && (verified.size >= VERIFIED_MAX || verifiedBytes + bytes > VERIFIED_MAX_BYTES)) forget(verified.keys().next().value!);
    verified.set(key, { claims, until: now() + VERIFIED_TTL_MS });
    verifiedBytes += bytes;
  }

  /** The token a Bearer header carries (401 when it carries none). */
  function bearerToken(authorization: string): string {
    const m = /^Bearer[ ]+([A-Za-z0-9_.-]{1,4096})[ ]*$/i.exec(authorization);
    if (!m) throw new AppError('TOKEN_INVALID', 'Invalid access token');
    return m[1]!;
  }

  /**
   * The token's live row, bound to its claims: the row must exist, be live, belong to the
   * identity and client secret the claims name, and hold the hash of the token's secret
   * part. A token signed by whoever learned AUTH_SECRET (another subject, another kind, a
   * deleted row, a row id read from the database) is refused: neither the key nor a read
   * of the database can mint access.
   */
  async function liveState(claims: TokenClaims): Promise<AccessTokenState> {
    return boundState(await caches.accessTokens.get(claims.tokenId, async () => (await store.identities.liveAccessToken(claims.tokenId)) ?? null), claims);
  }

  /** The token's state, checked live and bound to `claims` (see liveState). */
  function boundState(state: AccessTokenState | null, claims: TokenClaims): AccessTokenState {
    if (!state || state.expiresAt.getTime() <= now()) throw new AppError('TOKEN_INVALID', 'Access token revoked or expired');
    // Bound by method too: a JWT-auth token dies with JWT auth, as a UA token with its secret.
    if (
      state.identityId !== claims.identityId ||
      state.clientSecretId !== claims.clientSecretId ||
      state.authMethod !== (claims.authMethod ?? 'universal-auth') ||
      // The hash was made once when the token was verified: a 32-byte compare per request.
      !secretMatches(claims.secretHash, state.secretHash)
    ) {
      throw new AppError('TOKEN_INVALID', 'Invalid access token');
    }
    return state;
  }

  /** `expiresIn` counts from `issuedAt`, so a login answers exactly the configured TTL. */
  function issue(t: IssuedToken) {
    const { identityId, clientSecretId, tokenId, secret, issuedAt, expiresAt, maxTtl, authMethod } = t;
    const signed: IdentityTokenClaims = { identityId, clientSecretId, tokenId, secret, exp: Math.floor(expiresAt / 1000), ...(authMethod ? { authMethod } : {}) };
    const claims: VerifiedIdentityClaims = { ...signed, secretHash: hashTokenSecret(secret) };
    return tokens
      .sign(signed)
      .then((accessToken): LoginResult => {
        // Signed here, so its claims are known without verifying it: kept under the header
        // every client sends it in, ESO's read right after skips the HMAC and the JWT parse.
        keep(`Bearer ${accessToken}`, claims);
        return {
          accessToken,
          expiresIn: Math.max(0, Math.floor((expiresAt - issuedAt) / 1000)),
          accessTokenMaxTTL: maxTtl,
          tokenType: 'Bearer',
        };
      });
  }

  const actorOf = (claims: TokenClaims): IdentityActor => ({ kind: 'identity', identityId: claims.identityId, tokenId: claims.tokenId, clientSecretId: claims.clientSecretId });

  /** authenticate when something is not held, or a use must be counted. */
  async function authenticateLoading(authorization: string | undefined, origin: Origin): Promise<IdentityActor> {
    if (!authorization || authorization.trim() === '') throw new AppError('UNAUTHORIZED', 'Token missing');
    // A header longer than any that carries a token is not kept under its own text.
    const claims = authorization.length > MAX_BEARER_HEADER ? await claimsOf(bearerToken(authorization)) : await claimsOf(authorization, true);
    const state = await liveState(claims);
    if (!ipAllowed(state.accessTokenTrustedIps, () => origin.ip)) throw ipNotAllowed();
    if (state.numUsesLimit > 0) {
      // One statement counts the use (atomic under parallel requests); not audited, like
      // the lockout count: it is bookkeeping of a request, not a change anyone made.
      const used = await asIdentity(claims.identityId, origin).run(({ s }) => s.identities.useAccessToken(claims.tokenId));
      if (!used) throw usesExhausted();
    }
    return actorOf(claims);
  }

  return {
    /**
     * Signs the answer of a login another module (JWT / OIDC auth) has recorded: its row was
     * inserted with the hash of `secret` (see newAccessToken).
     */
    issue,

    /** Drops verified tokens whose time is up; returns how many. */
    sweep(): number {
      const t = now();
      let n = 0;
      for (const [token, v] of verified) {
        if (v.until <= t || v.claims.exp * 1000 <= t) {
          forget(token);
          n++;
        }
      }
      return n;
    },

    /** Verified tokens held (for the soak bench and tests). */
    get verifiedSize(): number {
      return verified.size;
    },

    /** The verified tokens' estimated bytes (never above VERIFIED_MAX_BYTES; vaultstandalone_cache_bytes{cache="verifiedTokens"}). */
    get verifiedBytes(): number {
      return verifiedBytes;
    },

    /**
     * `ip`: the client's address (server/http/clientAddress.ts). Order: unknown client id
     * (401), an address outside the client-secret trusted IPs (403, not counted as a
     * failure, as in Infisical), then the attempt is claimed (429 while locked) and only a
     * claimed attempt has its secret compared (claimLogin, in the claim's statement).
     */
    async login(input: { clientId: string; clientSecret: string; ip?: string | null }): Promise<LoginResult> {
      const clientId = isUuid(input.clientId) ? input.clientId.toLowerCase() : null;
      // A known client's lookup is cached (caches.logins: the claim below decides on the rows
      // as they are); an unknown or malformed id is read every time, and costs the same MAC.
      const { macKey, ua: found } = await (clientId === null
        ? store.identities.loginLookup(null)
        : caches.logins.get(clientId, () => store.identities.loginLookup(clientId)));
      // The MAC is computed even for an unknown client id, so both failures cost the same.
      const mac = await keyring.macWith(macKey, input.clientSecret);
      if (!found) throw invalidCredentials();
      if (!ipAllowed(found.clientSecretTrustedIps, () => input.ip)) throw ipNotAllowed();
      const issuedAt = now();
      // Failures are counted per source: a stranger's guesses do not lock out this client.
      const source = loginSource(input.ip);
      const { tokenId, secret, secretHash } = newAccessToken();
      // The new token's state, as liveAccessToken reads it, cached once the login has
      // committed: ESO's read right after needs no statement. Asked of the cache before the
      // transaction begins, so that an invalidation landing meanwhile (a secret revoked, the
      // identity's settings changed) keeps it out (ReadThroughCache's generations).
      let settle!: { ok: (state: AccessTokenState) => void; fail: (reason: Error) => void };
      const issued = new Promise<AccessTokenState>((ok, fail) => (settle = { ok, fail }));
      caches.accessTokens.get(tokenId, () => issued).catch(() => {});
      let state: AccessTokenState | undefined;
      try {
        const outcome = await asIdentityGrouped(found.identityId, `login:${found.identityId}`, { ip: input.ip }).run(async ({ s, audit, sent }) => {
          // The claim decides the attempt, and on a match issues the token, in its own
          // statement (one round trip a login); the identity's failure row for this source
          // stays locked until this transaction ends, so one client's logins from one source
          // are decided one at a time, in the order their claims run. Nothing this login sends later changes what the identity's
          // next claim reads, so that claim may follow at once (no round trip per login: ESO
          // logs in on every sync). Unless a secret awaits its re-MAC after a rekey: a match
          // under the old key clears the count only after a comparison made here.
          const claiming = s.identities.claimLogin(found.identityId, source, lockout.maxAttempts, lockout.seconds, new Date(issuedAt), mac, { id: tokenId, secretHash });
          if (!found.staleMacCandidates) sent();
          const claim = await claiming;
          if (!claim) throw invalidCredentials();
          if (!claim.claimed) return { locked: claim.retryAfterSeconds } as const;
          const ua = claim.ua;
          // Checked again on the row as it is now (a PATCH may have committed meanwhile).
          if (!ipAllowed(ua.clientSecretTrustedIps, () => input.ip)) throw ipNotAllowed();
          const expiresAt = issuedAt + ua.accessTokenTtl * 1000;
          const maxExpiresAt = issuedAt + ua.accessTokenMaxTtl * 1000;
          let secretId = claim.matchedSecretId;
          let remac = false;
          // A secret revoked or used up meanwhile: all of it rolls back.
          if (secretId !== undefined && !claim.issued) throw invalidCredentials();
          if (claim.undecided) {
            // Each candidate under the MAC key version it names; every one is compared.
            const match = await keyring.findClientSecret(input.clientSecret, await s.identities.usableClientSecrets(ua.identityId), mac);
            if (match) {
              secretId = match.id;
              // Made under another MAC key version: made again under `mac`'s, if that is the
              // current one (a lookup cached across a rekey holds the old key: no move back).
              const remacking = match.macKeyId !== mac.keyId;
              // One round trip; a secret revoked or used up meanwhile rolls all of it back.
              const writes = Promise.all([
                s.identities.markClientSecretUsed(secretId),
                s.identities.insertAccessToken({
                  id: tokenId,
                  secretHash,
                  identityId: ua.identityId,
                  clientSecretId: secretId,
                  expiresAt: new Date(expiresAt),
                  maxExpiresAt: new Date(maxExpiresAt),
                  numUsesLimit: ua.accessTokenNumUsesLimit,
                }),
                s.identities.clearLoginFailures(ua.identityId, source),
                remacking ? s.identities.remacClientSecret(secretId, mac.keyId, mac.mac) : false,
              ]);
              sent();
              const [used, , , remacked] = await writes;
              if (!used) throw invalidCredentials();
              remac = remacked;
            }
          }
          // Failed logins are not written to the audit trail (anyone could fill it with
          // them); the failure the claim counted stays, towards the lockout.
          if (secretId === undefined) return { failed: true } as const;
          await audit({
            eventType: 'login-identity-universal-auth',
            metadata: { identityId: ua.identityId, clientId: ua.clientId, clientSecretId: secretId, accessTokenId: tokenId, ...(remac ? { macKeyUpgraded: true } : {}) },
          });
          return { ua, secretId, expiresAt, maxExpiresAt } as const;
        });
        if ('locked' in outcome) {
          const retryAfter = outcome.locked;
          throw new AppError('RATE_LIMITED', `Too many failed login attempts; try again in ${retryAfter} seconds`, {
            headers: { 'Retry-After': String(retryAfter) },
          });
        }
        if ('failed' in outcome) throw invalidCredentials();
        const { ua, secretId, expiresAt, maxExpiresAt } = outcome;
        state = {
          identityId: ua.identityId,
          clientSecretId: secretId,
          authMethod: 'universal-auth',
          accessTokenTtl: ua.accessTokenTtl,
          accessTokenMaxTtl: ua.accessTokenMaxTtl,
          expiresAt: new Date(expiresAt),
          maxExpiresAt: new Date(maxExpiresAt),
          numUsesLimit: ua.accessTokenNumUsesLimit,
          numUses: 0,
          accessTokenTrustedIps: ua.accessTokenTrustedIps,
          secretHash,
        };
        return issue({ identityId: ua.identityId, clientSecretId: secretId, tokenId, secret, issuedAt, expiresAt, maxTtl: ua.accessTokenMaxTtl });
      } finally {
        // Refused, failed or rolled back: nothing is cached.
        if (state) settle.ok(state);
        else settle.fail(new Error('not issued'));
      }
    },

    /**
     * `authorization` is the raw header value (or undefined); `origin.ip` the client's address.
     * After the token is known live: the identity's access-token trusted IPs (403), then
     * one use counted when the token has a use limit (401 once exhausted), as Infisical.
     * With the token's claims and state held and no use to count (the hot path) the
     * answer is a value, not a promise; a refusal is always a rejected promise.
     */
    authenticate(authorization: string | undefined, origin: Origin = {}): IdentityActor | Promise<IdentityActor> {
      try {
        const claims = authorization !== undefined && authorization.length <= MAX_BEARER_HEADER ? heldClaims(authorization) : undefined;
        const held = claims && caches.accessTokens.peek(claims.tokenId);
        if (claims && held !== undefined) {
          const state = boundState(held, claims);
          if (!ipAllowed(state.accessTokenTrustedIps, () => origin.ip)) throw ipNotAllowed();
          if (state.numUsesLimit === 0) return actorOf(claims);
        }
      } catch (err) {
        return Promise.reject(err);
      }
      return authenticateLoading(authorization, origin);
    },

    /**
     * From then on every request with the token gets 401, on every replica. Checked as a
     * use is: the token's live row (its secret part included) and the access-token trusted
     * IPs (403 from elsewhere). A use is neither counted nor needed (revoking grants
     * nothing; a used-up token may still be revoked). Idempotent for the holder: the token
     * revoked already (ESO retries) answers as the first revoke did, and changes nothing.
     */
    async revoke(accessToken: string, origin: Origin = {}): Promise<void> {
      const claims = await claimsOf(accessToken);
      let state: AccessTokenState;
      try {
        state = await liveState(claims);
      } catch (err) {
        if (err instanceof AppError && err.code === 'TOKEN_INVALID' && (await store.identities.revokedAccessToken(claims.tokenId, claims.identityId, claims.secretHash))) return;
        throw err;
      }
      if (!ipAllowed(state.accessTokenTrustedIps, () => origin.ip)) throw ipNotAllowed();
      await asIdentityGrouped(claims.identityId, `token:${claims.tokenId}`, origin).run(async ({ s, audit, invalidate }) => {
        // Revoked meanwhile (ESO retries): changes nothing the second time.
        if (!(await s.identities.revokeAccessToken(claims.tokenId, claims.identityId, claims.secretHash))) return;
        await audit({ eventType: 'revoke-identity-access-token', metadata: { identityId: claims.identityId, accessTokenId: claims.tokenId } });
        invalidate(topics.accessToken, claims.tokenId);
      });
      forget(accessToken);
      // The header every client sends it in (another spelling of it expires with its TTL;
      // the token's state, checked per request, refuses it meanwhile).
      forget(`Bearer ${accessToken}`);
    },

    /**
     * Checked as a use is (the token's live row with its secret part, the access-token
     * trusted IPs, uses left, expiry), then extended by the issuing method's TTL up to the
     * token's maximum lifetime. The token's secret part stays: the answer is the same
     * token, with a later expiry.
     */
    async renew(accessToken: string, origin: Origin = {}): Promise<LoginResult> {
      const claims = await claimsOf(accessToken);
      const held = await liveState(claims);
      if (!ipAllowed(held.accessTokenTrustedIps, () => origin.ip)) throw ipNotAllowed();
      // Fresh from the database: the cached state does not follow the use count.
      const fresh = await store.identities.liveAccessToken(claims.tokenId);
      const state = boundState(fresh ?? null, claims);
      if (!ipAllowed(state.accessTokenTrustedIps, () => origin.ip)) throw ipNotAllowed();
      if (state.numUsesLimit > 0 && state.numUses >= state.numUsesLimit) throw usesExhausted();
      // The TTLs of the method that issued the token, as they are now.
      const renewedAt = now();
      const expiresAt = Math.min(renewedAt + state.accessTokenTtl * 1000, state.maxExpiresAt.getTime());
      if (expiresAt <= renewedAt) throw new AppError('TOKEN_INVALID', 'Access token reached its maximum lifetime');
      await asIdentity(claims.identityId, origin).run(async ({ s, audit, invalidate }) => {
        await s.identities.extendAccessToken(claims.tokenId, new Date(expiresAt));
        await audit({
          eventType: 'renew-identity-access-token',
          metadata: { identityId: claims.identityId, accessTokenId: claims.tokenId, expiresAt: new Date(expiresAt).toISOString() },
        });
        invalidate(topics.accessToken, claims.tokenId);
      });
      return issue({
        identityId: claims.identityId,
        clientSecretId: claims.clientSecretId,
        tokenId: claims.tokenId,
        secret: claims.secret,
        issuedAt: renewedAt,
        expiresAt,
        maxTtl: state.accessTokenMaxTtl,
        ...(claims.authMethod ? { authMethod: claims.authMethod } : {}),
      });
    },
  };
}
export type MachineAuth = ReturnType<typeof machineAuth>;
