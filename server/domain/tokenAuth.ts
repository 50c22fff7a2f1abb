// Token Auth of machine identities (Infisical's token-auth): an administrator mints
// long-lived access tokens for an identity, names them, lists them (never the token), and
// revokes them. The settings (TTLs, use limit, trusted IPs) apply as with every other
// method: a token expires by its TTL (renewable up to its max TTL), serves at most its
// use limit, and only from the trusted addresses. Tokens are issued exactly as a login
// issues them (machineAuth.issue), so they are stored and checked the same way.
import type { Store } from '../../storage/index.js';
import type { TrustedIp } from '../../storage/identities.js';
import type { TokenAuthRow, TokenAuthSettings, TokenAuthTokenRow } from '../../storage/tokenAuth.js';
import { AppError } from '../errors.js';
import { isUuid, requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { checkAccessTokenSettings, existingIdentity } from './identities.js';
import { methodToken, newAccessToken, type LoginResult, type MachineAuth } from './machineAuth.js';
import type { Origin, WritePipeline } from './pipeline.js';

export type TokenAuthInput = Partial<TokenAuthSettings>;

export interface TokenAuthDeps {
  store: { identities: Pick<Store['identities'], 'byIdWithAuth'>; tokenAuths: Pick<Store['tokenAuths'], 'get' | 'listTokens' | 'token'> };
  changes: Pick<WritePipeline, 'inOrganization'>;
  machineAuth: Pick<MachineAuth, 'issue'>;
  now?: () => number;
}

const ALL_ADDRESSES: TrustedIp[] = [
  { ipAddress: '0.0.0.0', type: 'ipv4', prefix: 0 },
  { ipAddress: '::', type: 'ipv6', prefix: 0 },
];

const DEFAULTS: TokenAuthSettings = { accessTokenTtl: 2_592_000, accessTokenMaxTtl: 2_592_000, accessTokenNumUsesLimit: 0, accessTokenTrustedIps: ALL_ADDRESSES };

export const MAX_TOKEN_NAME = 256;

const invalid = (message: string) => new AppError('VALIDATION', message);

function checkSettings(s: TokenAuthSettings): void {
  checkAccessTokenSettings(s);
}

function merge(base: TokenAuthSettings, input: TokenAuthInput): TokenAuthSettings {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as TokenAuthInput;
  return { ...base, ...defined };
}

const ipTexts = (list: TrustedIp[]) => list.map((r) => (r.prefix === undefined ? r.ipAddress : `${r.ipAddress}/${r.prefix}`)).join(', ');

function settingsMetadata(row: TokenAuthRow) {
  return {
    identityId: row.identityId,
    accessTokenTTL: row.accessTokenTtl,
    accessTokenMaxTTL: row.accessTokenMaxTtl,
    accessTokenNumUsesLimit: row.accessTokenNumUsesLimit,
    accessTokenTrustedIps: ipTexts(row.accessTokenTrustedIps),
  };
}

/** A token's name: trimmed, bounded, no control characters ('' = unnamed). */
export function tokenName(name: string | undefined): string {
  const n = (name ?? '').trim();
  if (n.length > MAX_TOKEN_NAME) throw invalid(`name must be at most ${MAX_TOKEN_NAME} characters`);
  if (/[\u0000-\u001f\u007f]/.test(n)) throw invalid('name must not contain control characters');
  return n;
}

export function tokenAuthDomain(deps: TokenAuthDeps) {
  const { store, changes, machineAuth } = deps;
  const now = deps.now ?? Date.now;
  const notConfigured = (identityId: string) => new AppError('NOT_FOUND', `Token Auth is not configured for identity '${identityId}'`);
  const tokenNotFound = (tokenId: string) => new AppError('NOT_FOUND', `Token with ID '${tokenId}' not found`);

  async function configOf(s: TokenAuthDeps['store'], identityId: string, forUpdate = false): Promise<TokenAuthRow> {
    const identity = await existingIdentity(s, identityId);
    const row = await s.tokenAuths.get(identity.id, { forUpdate });
    if (!row) throw notConfigured(identityId);
    return row;
  }

  async function tokenOf(s: Pick<TokenAuthDeps['store'], 'tokenAuths'>, tokenId: string, forUpdate = false): Promise<TokenAuthTokenRow> {
    const row = isUuid(tokenId) ? await s.tokenAuths.token(tokenId.toLowerCase(), { forUpdate }) : undefined;
    if (!row) throw tokenNotFound(tokenId);
    return row;
  }

  return {
    async attach(actor: Actor | SystemActor, identityId: string, input: TokenAuthInput, origin?: Origin): Promise<TokenAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      const withMax = input.accessTokenMaxTtl === undefined && input.accessTokenTtl !== undefined
        ? { ...input, accessTokenMaxTtl: Math.max(DEFAULTS.accessTokenMaxTtl, input.accessTokenTtl) }
        : input;
      const settings = merge(DEFAULTS, withMax);
      checkSettings(settings);
      return grant.run(async ({ s, audit }) => {
        const identity = await existingIdentity(s, identityId);
        if (await s.tokenAuths.get(identity.id)) throw new AppError('BAD_REQUEST', 'Token Auth is already configured for this identity');
        const row = await s.tokenAuths.insert(identity.id, settings);
        await audit({ eventType: 'add-identity-token-auth', metadata: settingsMetadata(row) });
        return row;
      });
    },

    /** Changes the given fields; trusted IPs and TTLs apply to live tokens at once, on every replica. */
    async update(actor: Actor | SystemActor, identityId: string, input: TokenAuthInput, origin?: Origin): Promise<TokenAuthRow> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, identityId, true);
        const next = merge(cur, input);
        checkSettings(next);
        const row = (await s.tokenAuths.update(cur.identityId, next))!;
        await audit({ eventType: 'update-identity-token-auth', metadata: settingsMetadata(row) });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    async get(actor: Actor | SystemActor, identityId: string): Promise<TokenAuthRow> {
      requireOrgAdmin(actor);
      return configOf(store, identityId);
    },

    /** Removes the method; every token minted with it stops working at once, on every replica. */
    async revoke(actor: Actor | SystemActor, identityId: string, origin?: Origin): Promise<TokenAuthRow> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const cur = await configOf(s, identityId, true);
        const row = (await s.tokenAuths.remove(cur.identityId))!;
        await audit({ eventType: 'revoke-identity-token-auth', metadata: { identityId: cur.identityId } });
        invalidate(topics.identity, cur.identityId);
        return row;
      });
    },

    /** A new token, in this answer only; its row (never the token) is what the list shows. */
    async createToken(
      actor: Actor | SystemActor,
      identityId: string,
      input: { name?: string },
      origin?: Origin,
    ): Promise<LoginResult & { tokenData: TokenAuthTokenRow }> {
      const grant = changes.inOrganization(actor, origin);
      const name = tokenName(input.name);
      const issuedAt = now();
      const { tokenId, secret, secretHash } = newAccessToken();
      const { cfg, row } = await grant.run(async ({ s, audit }) => {
        const cfg = await configOf(s, identityId);
        await s.identities.insertAccessToken({
          id: tokenId,
          secretHash,
          identityId: cfg.identityId,
          clientSecretId: null,
          authMethod: 'token-auth',
          expiresAt: new Date(issuedAt + cfg.accessTokenTtl * 1000),
          maxExpiresAt: new Date(issuedAt + cfg.accessTokenMaxTtl * 1000),
          numUsesLimit: cfg.accessTokenNumUsesLimit,
          name,
        });
        await audit({ eventType: 'create-token-identity-token-auth', metadata: { identityId: cfg.identityId, accessTokenId: tokenId, name } });
        return { cfg, row: (await s.tokenAuths.token(tokenId))! };
      });
      const issued = await machineAuth.issue(methodToken(cfg.identityId, { tokenId, secret }, issuedAt, cfg, 'token-auth'));
      return { ...issued, tokenData: row };
    },

    /** The identity's live tokens (not revoked, not expired), oldest first; never the tokens themselves. */
    async listTokens(actor: Actor | SystemActor, identityId: string, page: { offset: number; limit: number }): Promise<TokenAuthTokenRow[]> {
      requireOrgAdmin(actor);
      const cfg = await configOf(store, identityId);
      return store.tokenAuths.listTokens(cfg.identityId, page);
    },

    async getToken(actor: Actor | SystemActor, tokenId: string): Promise<TokenAuthTokenRow> {
      requireOrgAdmin(actor);
      return tokenOf(store, tokenId);
    },

    async renameToken(actor: Actor | SystemActor, tokenId: string, input: { name?: string }, origin?: Origin): Promise<TokenAuthTokenRow> {
      const grant = changes.inOrganization(actor, origin);
      const name = input.name === undefined ? undefined : tokenName(input.name);
      return grant.run(async ({ s, audit }) => {
        const cur = await tokenOf(s, tokenId, true);
        // No name given: nothing to change (Infisical's body has only the optional name).
        if (name === undefined) throw invalid('name is required');
        const row = (await s.tokenAuths.renameToken(cur.id, name))!;
        await audit({ eventType: 'update-token-identity-token-auth', metadata: { identityId: cur.identityId, accessTokenId: cur.id, name } });
        return row;
      });
    },

    /** From now on every request with it gets 401, on every replica. A revoked token is not found again (as Infisical). */
    async revokeToken(actor: Actor | SystemActor, tokenId: string, origin?: Origin): Promise<TokenAuthTokenRow> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const cur = await tokenOf(s, tokenId, true);
        if (cur.revokedAt !== null || !(await s.tokenAuths.revokeToken(cur.id))) throw tokenNotFound(tokenId);
        await audit({ eventType: 'revoke-token-identity-token-auth', metadata: { identityId: cur.identityId, accessTokenId: cur.id } });
        invalidate(topics.accessToken, cur.id);
        return cur;
      });
    },
  };
}
export type TokenAuthDomain = ReturnType<typeof tokenAuthDomain>;
