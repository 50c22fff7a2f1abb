// Machine identities and their Universal Auth credentials. A client secret is 256
// random bits shown once; only its keyed MAC is stored.
//
// Identities belong to the instance's organization: creating, listing and deleting
// them, and managing their credentials, is for the superadmin (and the service itself).
// Their project roles are set by project admins (server/domain/memberships.ts).
import { randomBytes } from 'node:crypto';
import type { Store } from '../../storage/index.js';
import type { AccessTokenMethod, ClientSecretInfo, IdentityListRow, IdentityRow, TrustedIp, UniversalAuthRow, UniversalAuthSettings } from '../../storage/identities.js';
import { AppError } from '../errors.js';
import { isUuid, requireOrgAdmin, type Actor, type SystemActor } from './access.js';
import { topics } from './caches.js';
import type { Keyring } from './keyring.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { validateName } from './text.js';

export interface IdentitiesDeps {
  store: { identities: Pick<Store['identities'], 'byIdWithAuth' | 'listByOrg' | 'universalAuthByIdentity' | 'listClientSecrets' | 'clientSecretInfo'>; organizations: Pick<Store['organizations'], 'ensureDefault'> };
  keyring: Pick<Keyring, 'macCurrent'>;
  changes: Pick<WritePipeline, 'inOrganization'>;
}

export interface IdentityView extends IdentityRow {
  authMethods: AccessTokenMethod[];
}

const methodsOf = (r: { hasUniversalAuth: boolean; tokenAuthMethods: IdentityListRow['tokenAuthMethods'] }): IdentityView['authMethods'] => [
  ...(r.hasUniversalAuth ? ['universal-auth' as const] : []),
  ...r.tokenAuthMethods,
];

/** Infisical's bounds: TTLs up to ten years. */
export const MAX_TTL_SECONDS = 315_360_000;

const identityNotFound = (id: string) => new AppError('NOT_FOUND', `Identity with ID '${id}' not found`);

function ttlError(name: string, value: number | undefined, min: number): AppError | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < min || value > MAX_TTL_SECONDS) {
    return new AppError('VALIDATION', `${name} must be an integer from ${min} to ${MAX_TTL_SECONDS}`);
  }
  return undefined;
}

type IdentityStores = Pick<Store, 'identities'>;

/** Universal Auth settings as a request gives them (absent: keep, or the default on attach). */
export interface UniversalAuthInput {
  accessTokenTtl?: number;
  accessTokenMaxTtl?: number;
  accessTokenNumUsesLimit?: number;
  clientSecretTrustedIps?: TrustedIp[];
  accessTokenTrustedIps?: TrustedIp[];
}

const MAX_NUM_USES = 2_147_483_647;

/** Bounds of every given field; the TTL pair is checked on the merged result. */
function checkSettings(opts: UniversalAuthInput): void {
  const bad = ttlError('accessTokenTTL', opts.accessTokenTtl, 1) ?? ttlError('accessTokenMaxTTL', opts.accessTokenMaxTtl, 1);
  if (bad) throw bad;
  const n = opts.accessTokenNumUsesLimit;
  if (n !== undefined && (!Number.isSafeInteger(n) || n < 0 || n > MAX_NUM_USES)) {
    throw new AppError('VALIDATION', 'accessTokenNumUsesLimit must be a non-negative integer');
  }
  for (const name of ['clientSecretTrustedIps', 'accessTokenTrustedIps'] as const) {
    const list = opts[name];
    if (list !== undefined && (list.length === 0 || list.length > 100)) {
      throw new AppError('VALIDATION', `${name} must hold from 1 to 100 IP addresses or ranges`);
    }
  }
}

/** How the audit trail names a list (its metadata holds scalars): `10.0.0.0/8, ::1`. */
const ipTexts = (list: TrustedIp[]) => list.map((r) => (r.prefix === undefined ? r.ipAddress : `${r.ipAddress}/${r.prefix}`)).join(', ');

function settingsMetadata(ua: UniversalAuthSettings & { identityId: string }) {
  return {
    identityId: ua.identityId,
    accessTokenTTL: ua.accessTokenTtl,
    accessTokenMaxTTL: ua.accessTokenMaxTtl,
    accessTokenNumUsesLimit: ua.accessTokenNumUsesLimit,
    clientSecretTrustedIps: ipTexts(ua.clientSecretTrustedIps),
    accessTokenTrustedIps: ipTexts(ua.accessTokenTrustedIps),
  };
}

/** The identity, or 404 (a malformed id is simply not found). */
export async function existingIdentity(s: { identities: Pick<Store['identities'], 'byIdWithAuth'> }, identityId: string): Promise<IdentityView> {
  const row = isUuid(identityId) ? await s.identities.byIdWithAuth(identityId.toLowerCase()) : undefined;
  if (!row) throw identityNotFound(identityId);
  const { hasUniversalAuth, tokenAuthMethods, ...identity } = row;
  return { ...identity, authMethods: methodsOf({ hasUniversalAuth, tokenAuthMethods }) };
}

export function identitiesDomain(deps: IdentitiesDeps) {
  const { store, keyring, changes } = deps;

  /** The instance has one organization; naming any other is a 404. */
  async function checkOrg(s: Pick<Store, 'organizations'> | IdentitiesDeps['store'], orgId: string | undefined) {
    const org = await s.organizations.ensureDefault();
    if (orgId !== undefined && orgId.toLowerCase() !== org.id) throw new AppError('NOT_FOUND', `Organization with ID '${orgId}' not found`);
    return org;
  }

  async function universalAuthOf(s: IdentityStores | IdentitiesDeps['store'], identityId: string): Promise<UniversalAuthRow> {
    await existingIdentity(s, identityId);
    const ua = await s.identities.universalAuthByIdentity(identityId.toLowerCase());
    if (!ua) throw new AppError('NOT_FOUND', `Universal Auth is not configured for identity '${identityId}'`);
    return ua;
  }

  return {
    async create(actor: Actor | SystemActor, input: { name: string; organizationId?: string }, origin?: Origin): Promise<IdentityView> {
      const grant = changes.inOrganization(actor, origin);
      const name = validateName(input.name, 'name');
      return grant.run(async ({ s, audit }) => {
        const org = await checkOrg(s, input.organizationId);
        const identity = await s.identities.insert({ orgId: org.id, name });
        await audit({ eventType: 'create-identity', metadata: { identityId: identity.id, name } });
        return { ...identity, authMethods: [] };
      });
    },

    async list(actor: Actor | SystemActor, input: { orgId?: string } = {}): Promise<IdentityView[]> {
      requireOrgAdmin(actor);
      const org = await checkOrg(store, input.orgId);
      const rows = await store.identities.listByOrg(org.id);
      return rows.map(({ hasUniversalAuth, tokenAuthMethods, ...i }) => ({ ...i, authMethods: methodsOf({ hasUniversalAuth, tokenAuthMethods }) }));
    },

    async get(actor: Actor | SystemActor, identityId: string): Promise<IdentityView> {
      requireOrgAdmin(actor);
      return existingIdentity(store, identityId);
    },

    /** Renames the identity (the superadmin's; its tokens and memberships are unchanged). */
    async update(actor: Actor | SystemActor, identityId: string, input: { name?: string }, origin?: Origin): Promise<IdentityView> {
      const grant = changes.inOrganization(actor, origin);
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      return grant.run(async ({ s, audit, invalidate }) => {
        const identity = await existingIdentity(s, identityId);
        if (name === undefined || name === identity.name) return identity;
        await s.identities.rename(identity.id, name);
        await audit({ eventType: 'update-identity', metadata: { identityId: identity.id, name, oldName: identity.name } });
        invalidate(topics.identity, identity.id);
        return existingIdentity(s, identity.id);
      });
    },

    /** Its tokens die at once, here and on every replica; memberships go with it. */
    async delete(actor: Actor | SystemActor, identityId: string, origin?: Origin): Promise<IdentityView> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const identity = await existingIdentity(s, identityId);
        await s.identities.delete(identity.id);
        await audit({ eventType: 'delete-identity', metadata: { identityId: identity.id, name: identity.name } });
        invalidate(topics.identity, identity.id);
        return identity;
      });
    },

    async attachUniversalAuth(actor: Actor | SystemActor, identityId: string, opts: UniversalAuthInput = {}, origin?: Origin): Promise<UniversalAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      checkSettings(opts);
      const ttl = opts.accessTokenTtl ?? 2_592_000;
      const maxTtl = opts.accessTokenMaxTtl ?? Math.max(2_592_000, ttl);
      if (ttl > maxTtl) throw new AppError('BAD_REQUEST', 'Access token TTL cannot be greater than max TTL');
      return grant.run(async ({ s, audit }) => {
        const identity = await existingIdentity(s, identityId);
        if (await s.identities.universalAuthByIdentity(identity.id)) {
          throw new AppError('BAD_REQUEST', 'Universal Auth is already configured for this identity');
        }
        const ua = await s.identities.attachUniversalAuth({
          identityId: identity.id,
          accessTokenTtl: ttl,
          accessTokenMaxTtl: maxTtl,
          accessTokenNumUsesLimit: opts.accessTokenNumUsesLimit,
          clientSecretTrustedIps: opts.clientSecretTrustedIps,
          accessTokenTrustedIps: opts.accessTokenTrustedIps,
        });
        await audit({ eventType: 'add-identity-universal-auth', metadata: settingsMetadata(ua) });
        return ua;
      });
    },

    /**
     * Changes the given settings, keeps the others. New limits and TTLs apply to tokens
     * issued from now on (a token keeps the use limit it was issued with, as in Infisical);
     * the trusted IPs apply at once to every login and every request, on every replica.
     */
    async updateUniversalAuth(actor: Actor | SystemActor, identityId: string, opts: UniversalAuthInput, origin?: Origin): Promise<UniversalAuthRow> {
      const grant = changes.inOrganization(actor, origin);
      checkSettings(opts);
      return grant.run(async ({ s, audit, invalidate }) => {
        const identity = await existingIdentity(s, identityId);
        const cur = await s.identities.universalAuthByIdentity(identity.id, { forUpdate: true });
        if (!cur) throw new AppError('NOT_FOUND', `Universal Auth is not configured for identity '${identityId}'`);
        const next: UniversalAuthSettings = {
          accessTokenTtl: opts.accessTokenTtl ?? cur.accessTokenTtl,
          accessTokenMaxTtl: opts.accessTokenMaxTtl ?? cur.accessTokenMaxTtl,
          accessTokenNumUsesLimit: opts.accessTokenNumUsesLimit ?? cur.accessTokenNumUsesLimit,
          clientSecretTrustedIps: opts.clientSecretTrustedIps ?? cur.clientSecretTrustedIps,
          accessTokenTrustedIps: opts.accessTokenTrustedIps ?? cur.accessTokenTrustedIps,
        };
        if (next.accessTokenTtl > next.accessTokenMaxTtl) throw new AppError('BAD_REQUEST', 'Access token TTL cannot be greater than max TTL');
        const ua = (await s.identities.updateUniversalAuth(identity.id, next))!;
        await audit({ eventType: 'update-identity-universal-auth', metadata: settingsMetadata(ua) });
        // Cached token states carry the access-token trusted IPs.
        invalidate(topics.identity, identity.id);
        return ua;
      });
    },

    async getUniversalAuth(actor: Actor | SystemActor, identityId: string): Promise<UniversalAuthRow> {
      requireOrgAdmin(actor);
      return universalAuthOf(store, identityId);
    },

    /** Returns the client secret in clear: the only time it ever exists outside the caller. */
    async createClientSecret(
      actor: Actor | SystemActor,
      identityId: string,
      opts: { description?: string; ttl?: number; numUsesLimit?: number } = {},
      origin?: Origin,
    ): Promise<{ clientSecret: string; clientSecretData: ClientSecretInfo }> {
      const grant = changes.inOrganization(actor, origin);
      const bad = ttlError('ttl', opts.ttl, 0);
      if (bad) throw bad;
      if (opts.numUsesLimit !== undefined && (!Number.isSafeInteger(opts.numUsesLimit) || opts.numUsesLimit < 0 || opts.numUsesLimit > 2_147_483_647)) {
        throw new AppError('VALIDATION', 'numUsesLimit must be a non-negative integer');
      }
      const description = (opts.description ?? '').trim();
      if (description.length > 256) throw new AppError('VALIDATION', 'description must be at most 256 characters');
      const clientSecret = randomBytes(32).toString('hex');
      const made = await keyring.macCurrent(clientSecret);
      const row = await grant.run(async ({ s, audit }) => {
        const ua = await universalAuthOf(s, identityId);
        // The MAC key version is held until the commit; one retired meanwhile by a rekey: made again.
        const { keyId: macKeyId, mac: secretHash } = (await s.keys.holdKey(made.keyId)) ? made : await keyring.macCurrent(clientSecret);
        const { secretHash: _hash, macKeyId: _key, ...r } = await s.identities.insertClientSecret({
          identityId: ua.identityId,
          prefix: clientSecret.slice(0, 4),
          secretHash,
          macKeyId,
          description,
          ttl: opts.ttl,
          numUsesLimit: opts.numUsesLimit,
        });
        // Names the secret by id only: its value never reaches the audit trail.
        await audit({ eventType: 'create-identity-universal-auth-client-secret', metadata: { identityId: ua.identityId, clientSecretId: r.id } });
        return r;
      });
      return { clientSecret, clientSecretData: row };
    },

    /** Client secrets that are not revoked, without values or hashes. */
    async listClientSecrets(actor: Actor | SystemActor, identityId: string): Promise<ClientSecretInfo[]> {
      requireOrgAdmin(actor);
      const ua = await universalAuthOf(store, identityId);
      return store.identities.listClientSecrets(ua.identityId);
    },

    async getClientSecret(actor: Actor | SystemActor, identityId: string, clientSecretId: string): Promise<ClientSecretInfo> {
      requireOrgAdmin(actor);
      const ua = await universalAuthOf(store, identityId);
      const row = isUuid(clientSecretId) ? await store.identities.clientSecretInfo(ua.identityId, clientSecretId.toLowerCase()) : undefined;
      if (!row) throw new AppError('NOT_FOUND', `Client secret '${clientSecretId}' not found`);
      return row;
    },

    /**
     * Tokens issued with the secret stop working at once, here and on every replica.
     * Revoking a revoked secret again changes nothing and answers the same.
     */
    async revokeClientSecret(actor: Actor | SystemActor, identityId: string, clientSecretId: string, origin?: Origin): Promise<ClientSecretInfo> {
      return changes.inOrganization(actor, origin).run(async ({ s, audit, invalidate }) => {
        const ua = await universalAuthOf(s, identityId);
        const cur = isUuid(clientSecretId) ? await s.identities.clientSecretInfo(ua.identityId, clientSecretId.toLowerCase(), { forUpdate: true }) : undefined;
        if (!cur) throw new AppError('NOT_FOUND', `Client secret '${clientSecretId}' not found`);
        if (cur.isRevoked) return cur;
        const revoked = (await s.identities.revokeClientSecret(ua.identityId, cur.id))!;
        await audit({ eventType: 'revoke-identity-universal-auth-client-secret', metadata: { identityId: ua.identityId, clientSecretId: cur.id } });
        invalidate(topics.clientSecret, cur.id);
        return revoked;
      });
    },
  };
}
export type IdentitiesDomain = ReturnType<typeof identitiesDomain>;

/**
 * The access-token settings every login method shares (TTL, max TTL, use limit, trusted
 * IPs), checked once for all of them: 422 naming the field, 400 for a TTL over its max.
 */
export function checkAccessTokenSettings(s: { accessTokenTtl: number; accessTokenMaxTtl: number; accessTokenNumUsesLimit: number; accessTokenTrustedIps: readonly unknown[] }): void {
  const invalid = (message: string) => new AppError('VALIDATION', message);
  for (const [name, v] of [['accessTokenTTL', s.accessTokenTtl], ['accessTokenMaxTTL', s.accessTokenMaxTtl]] as const) {
    if (!Number.isSafeInteger(v) || v < 1 || v > MAX_TTL_SECONDS) throw invalid(`${name} must be an integer from 1 to ${MAX_TTL_SECONDS}`);
  }
  const n = s.accessTokenNumUsesLimit;
  if (!Number.isSafeInteger(n) || n < 0 || n > 2_147_483_647) throw invalid('accessTokenNumUsesLimit must be a non-negative integer');
  if (s.accessTokenTrustedIps.length === 0 || s.accessTokenTrustedIps.length > 100) {
    throw invalid('accessTokenTrustedIps must hold from 1 to 100 IP addresses or ranges');
  }
  if (s.accessTokenTtl > s.accessTokenMaxTtl) throw new AppError('BAD_REQUEST', 'Access token TTL cannot be greater than max TTL');
}
