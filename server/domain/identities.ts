// Machine identities and their Universal Auth credentials. A client secret is 256
// random bits shown once; only its keyed MAC is stored.
import { randomBytes } from 'node:crypto';
import type { CacheBus } from '../../storage/cache.js';
import type { Store } from '../../storage/index.js';
import { ROLES, type Role } from '../../storage/memberships.js';
import { AppError } from '../errors.js';
import { auditActor, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import type { Keyring } from './keyring.js';

export interface IdentitiesDeps {
  store: Store;
  keyring: Keyring;
  access: AccessControl;
  bus: CacheBus;
}

export function identitiesDomain(deps: IdentitiesDeps) {
  const { store, keyring, access, bus } = deps;
  return {
    async create(actor: Actor | SystemActor, input: { name: string }) {
      const name = input.name.trim();
      if (name.length < 1 || name.length > 64) throw new AppError('VALIDATION', 'name must be 1 to 64 characters');
      return store.transaction(async (s) => {
        const org = await s.organizations.ensureDefault();
        const identity = await s.identities.insert({ orgId: org.id, name });
        await s.audit.append(s.tx, { ...auditActor(actor), eventType: 'create-identity', metadata: { identityId: identity.id, name } });
        return identity;
      });
    },

    async attachUniversalAuth(actor: Actor | SystemActor, identityId: string, opts: { accessTokenTtl?: number; accessTokenMaxTtl?: number } = {}) {
      return store.transaction(async (s) => {
        if (!(await s.identities.byId(identityId))) throw new AppError('NOT_FOUND', `Identity with ID '${identityId}' not found`);
        if (await s.identities.universalAuthByIdentity(identityId)) {
          throw new AppError('BAD_REQUEST', 'Universal Auth is already configured for this identity');
        }
        const ua = await s.identities.attachUniversalAuth({ identityId, ...opts });
        await s.audit.append(s.tx, { ...auditActor(actor), eventType: 'add-identity-universal-auth', metadata: { identityId } });
        return ua;
      });
    },

    /** Returns the client secret in clear: the only time it ever exists outside the caller. */
    async createClientSecret(actor: Actor | SystemActor, identityId: string, opts: { description?: string; ttl?: number; numUsesLimit?: number } = {}) {
      const clientSecret = randomBytes(32).toString('hex');
      const secretHash = await keyring.macClientSecret(clientSecret);
      const row = await store.transaction(async (s) => {
        if (!(await s.identities.universalAuthByIdentity(identityId))) {
          throw new AppError('NOT_FOUND', `Universal Auth is not configured for identity '${identityId}'`);
        }
        const r = await s.identities.insertClientSecret({ identityId, prefix: clientSecret.slice(0, 4), secretHash, ...opts });
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'create-identity-universal-auth-client-secret',
          metadata: { identityId, clientSecretId: r.id },
        });
        return r;
      });
      return { clientSecret, clientSecretData: row };
    },

    /** Tokens issued with the secret stop working at once, here and on every replica. */
    async revokeClientSecret(actor: Actor | SystemActor, identityId: string, clientSecretId: string) {
      await store.transaction(async (s) => {
        if (!(await s.identities.revokeClientSecret(identityId, clientSecretId))) {
          throw new AppError('NOT_FOUND', `Client secret '${clientSecretId}' not found`);
        }
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'revoke-identity-universal-auth-client-secret',
          metadata: { identityId, clientSecretId },
        });
      });
      await bus.publish(topics.clientSecret, clientSecretId);
    },

    async setProjectRole(actor: Actor | SystemActor, input: { project: ProjectRef; identityId: string; role: Role }) {
      if (!ROLES.includes(input.role)) throw new AppError('VALIDATION', `role must be one of ${ROLES.join(', ')}`);
      const { project } = await access.authorize(actor, input.project, 'project:admin');
      const membership = await store.transaction(async (s) => {
        if (!(await s.identities.byId(input.identityId))) throw new AppError('NOT_FOUND', `Identity with ID '${input.identityId}' not found`);
        const m = await s.memberships.upsertIdentity(project.id, input.identityId, input.role);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'set-identity-project-role',
          projectId: project.id,
          metadata: { identityId: input.identityId, role: input.role },
        });
        return m;
      });
      await bus.publish(topics.membership, `${project.id}:identity:${input.identityId}`);
      return membership;
    },
  };
}
export type IdentitiesDomain = ReturnType<typeof identitiesDomain>;
