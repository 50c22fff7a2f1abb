// Universal Auth: client credentials in, a revocable access token out; and the
// authentication of every machine request that carries one.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Store } from '../../storage/index.js';
import type { IdentityTokens } from '../auth/tokens.js';
import { AppError } from '../errors.js';
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

/** See claimsOf: 10,000 entries of ~1 KB. */
export const VERIFIED_MAX = 10_000;
export const VERIFIED_TTL_MS = 60_000;

export interface MachineAuthDeps {
  store: {
    identities: Pick<
      Store['identities'],
      'universalAuthByClientId' | 'universalAuthByIdentity' | 'usableClientSecrets' | 'recordLoginFailure' | 'liveAccessToken'
    >;
  };
  keyring: Pick<Keyring, 'macClientSecret'>;
  tokens: IdentityTokens;
  caches: Pick<Caches, 'accessTokens'>;
  changes: Pick<WritePipeline, 'byCaller'>;
  lockout: { maxAttempts: number; seconds: number };
  now?: () => number;
}

export function machineAuth(deps: MachineAuthDeps) {
  const { store, keyring, tokens, caches, changes, lockout } = deps;
  const asIdentity = (identityId: string, origin?: Origin) => changes.byCaller({ actorType: 'identity', actorId: identityId }, origin);
  const now = deps.now ?? Date.now;
  // Verified JWTs by their exact text: claims are immutable, so only expiry and
  // liveness (checked per request) can change. An entry (~1 KB: the token's text and
  // claims) is kept VERIFIED_TTL_MS: a sync's requests reuse it, and an HS256 check is
  // ~20 µs when it is gone. Bounded, oldest evicted first; swept with the caches.
  const verified = new Map<string, { claims: Awaited<ReturnType<IdentityTokens['verify']>>; until: number }>();

  async function claimsOf(token: string) {
    const hit = verified.get(token);
    let claims = hit !== undefined && hit.until > now() ? hit.claims : undefined;
    if (!claims) {
      claims = await tokens.verify(token);
      verified.delete(token);
      if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
      verified.set(token, { claims, until: now() + VERIFIED_TTL_MS });
    }
    if (claims.exp * 1000 <= now()) {
      verified.delete(token);
      throw new AppError('TOKEN_INVALID', 'Access token expired');
    }
    return claims;
  }

  /**
   * The token's live row, bound to its claims: the row must exist, be live, and belong to
   * the identity and client secret the claims name. A token re-signed by whoever learned
   * AUTH_SECRET (another subject, another kind, a deleted row) is refused: the key alone
   * cannot mint access.
   */
  async function liveState(claims: { tokenId: string; identityId: string; clientSecretId: string }) {
    const state = await caches.accessTokens.get(claims.tokenId, async () => (await store.identities.liveAccessToken(claims.tokenId)) ?? null);
    if (!state || state.expiresAt.getTime() <= now()) throw new AppError('TOKEN_INVALID', 'Access token revoked or expired');
    if (state.identityId !== claims.identityId || state.clientSecretId !== claims.clientSecretId) {
      throw new AppError('TOKEN_INVALID', 'Invalid access token');
    }
    return state;
  }

  /** `expiresIn` counts from `issuedAt`, so a login answers exactly the configured TTL. */
  function issue(identityId: string, clientSecretId: string, tokenId: string, issuedAt: number, expiresAt: number, maxTtl: number) {
    return tokens
      .sign({ identityId, clientSecretId, tokenId, exp: Math.floor(expiresAt / 1000) })
      .then((accessToken): LoginResult => ({
        accessToken,
        expiresIn: Math.max(0, Math.floor((expiresAt - issuedAt) / 1000)),
        accessTokenMaxTTL: maxTtl,
        tokenType: 'Bearer',
      }));
  }

  return {
    /** Drops verified tokens whose time is up; returns how many. */
    sweep(): number {
      const t = now();
      let n = 0;
      for (const [token, v] of verified) {
        if (v.until <= t || v.claims.exp * 1000 <= t) {
          verified.delete(token);
          n++;
        }
      }
      return n;
    },

    /** Verified tokens held (for the soak bench and tests). */
    get verifiedSize(): number {
      return verified.size;
    },

    async login(input: { clientId: string; clientSecret: string; ip?: string | null }): Promise<LoginResult> {
      // The MAC is computed even for an unknown client id, so both failures cost the same.
      const [ua, mac] = await Promise.all([
        isUuid(input.clientId) ? store.identities.universalAuthByClientId(input.clientId.toLowerCase()) : undefined,
        keyring.macClientSecret(input.clientSecret),
      ]);
      if (!ua) throw invalidCredentials();
      if (ua.lockedUntil && ua.lockedUntil.getTime() > now()) {
        const retryAfter = Math.ceil((ua.lockedUntil.getTime() - now()) / 1000);
        throw new AppError('RATE_LIMITED', `Too many failed login attempts; try again in ${retryAfter} seconds`, {
          headers: { 'Retry-After': String(retryAfter) },
        });
      }
      const candidates = await store.identities.usableClientSecrets(ua.identityId);
      let match: (typeof candidates)[number] | undefined;
      // Compare against every candidate: no early exit that times the position.
      for (const c of candidates) if (c.secretHash.length === mac.length && timingSafeEqual(c.secretHash, mac)) match = c;
      if (!match) {
        await store.identities.recordLoginFailure(ua.identityId, lockout.maxAttempts, lockout.seconds);
        throw invalidCredentials();
      }
      const tokenId = randomUUID();
      const issuedAt = now();
      const expiresAt = issuedAt + ua.accessTokenTtl * 1000;
      const maxExpiresAt = issuedAt + ua.accessTokenMaxTtl * 1000;
      const secretId = match.id;
      await asIdentity(ua.identityId, { ip: input.ip }).run(async ({ s, audit }) => {
        if (!(await s.identities.markClientSecretUsed(secretId))) throw invalidCredentials();
        await s.identities.insertAccessToken({
          id: tokenId,
          identityId: ua.identityId,
          clientSecretId: secretId,
          expiresAt: new Date(expiresAt),
          maxExpiresAt: new Date(maxExpiresAt),
        });
        if (ua.failedLogins !== 0 || ua.lockedUntil) await s.identities.clearLoginFailures(ua.identityId);
        // Successful logins only: failed ones are not written (anyone could fill the
        // trail with them); they count towards the lockout instead.
        await audit({
          eventType: 'login-identity-universal-auth',
          metadata: { identityId: ua.identityId, clientId: ua.clientId, clientSecretId: secretId, accessTokenId: tokenId },
        });
      });
      return issue(ua.identityId, secretId, tokenId, issuedAt, expiresAt, ua.accessTokenMaxTtl);
    },

    /** `authorization` is the raw header value (or undefined). */
    async authenticate(authorization: string | undefined): Promise<IdentityActor> {
      if (!authorization || authorization.trim() === '') throw new AppError('UNAUTHORIZED', 'Token missing');
      const m = /^Bearer[ ]+([A-Za-z0-9_.-]{1,4096})[ ]*$/i.exec(authorization);
      if (!m) throw new AppError('TOKEN_INVALID', 'Invalid access token');
      const claims = await claimsOf(m[1]!);
      await liveState(claims);
      return { kind: 'identity', identityId: claims.identityId, tokenId: claims.tokenId, clientSecretId: claims.clientSecretId };
    },

    /** Idempotent for a token of ours; from then on every request with it gets 401, on every replica. */
    async revoke(accessToken: string, origin?: Origin): Promise<void> {
      const claims = await tokens.verify(accessToken);
      await asIdentity(claims.identityId, origin).run(async ({ s, audit, invalidate }) => {
        // Revoking a token twice (ESO retries) changes nothing the second time.
        if (!(await s.identities.revokeAccessToken(claims.tokenId, claims.identityId))) return;
        await audit({ eventType: 'revoke-identity-access-token', metadata: { identityId: claims.identityId, accessTokenId: claims.tokenId } });
        invalidate(topics.accessToken, claims.tokenId);
      });
      verified.delete(accessToken);
    },

    async renew(accessToken: string, origin?: Origin): Promise<LoginResult> {
      const claims = await claimsOf(accessToken);
      const state = await liveState(claims);
      const ua = await store.identities.universalAuthByIdentity(claims.identityId);
      if (!ua) throw new AppError('TOKEN_INVALID', 'Access token revoked or expired');
      const renewedAt = now();
      const expiresAt = Math.min(renewedAt + ua.accessTokenTtl * 1000, state.maxExpiresAt.getTime());
      if (expiresAt <= renewedAt) throw new AppError('TOKEN_INVALID', 'Access token reached its maximum lifetime');
      await asIdentity(claims.identityId, origin).run(async ({ s, audit, invalidate }) => {
        await s.identities.extendAccessToken(claims.tokenId, new Date(expiresAt));
        await audit({
          eventType: 'renew-identity-access-token',
          metadata: { identityId: claims.identityId, accessTokenId: claims.tokenId, expiresAt: new Date(expiresAt).toISOString() },
        });
        invalidate(topics.accessToken, claims.tokenId);
      });
      return issue(claims.identityId, claims.clientSecretId, claims.tokenId, renewedAt, expiresAt, ua.accessTokenMaxTtl);
    },
  };
}
export type MachineAuth = ReturnType<typeof machineAuth>;
