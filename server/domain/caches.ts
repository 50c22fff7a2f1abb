// The hot path's read-through caches and the invalidation topics that keep them
// true. A change publishes on the bus inside the same code path that committed it;
// other replicas hear it through Redis.
import { ReadThroughCache, type CacheBus } from '../../storage/cache.js';
import type { AccessTokenState } from '../../storage/identities.js';
import type { FolderRow } from '../../storage/folders.js';
import type { Role } from '../../storage/memberships.js';
import type { ProjectRecord } from '../../storage/projects.js';
import type { SecretCipherRow } from '../../storage/secrets.js';

/** Ciphertext rows of a folder (and its sub-folders when recursive), as loaded together. */
export interface FolderSnapshot {
  folders: FolderRow[];
  rows: SecretCipherRow[];
}

export type ActorKind = 'identity' | 'user';

export const topics = {
  project: 'project', // key: project id
  projectSlug: 'project-slug', // key: slug
  environment: 'environment', // key: environment id (any folder or secret change inside it)
  membership: 'membership', // key: `${projectId}:${kind}:${actorId}`
  accessToken: 'access-token', // key: token id
  clientSecret: 'client-secret', // key: client secret id
  identity: 'identity', // key: identity id
  userSession: 'user-session', // key: session id
} as const;
export type Topic = (typeof topics)[keyof typeof topics];

/**
 * How long an entry may live without an invalidation: the bound on staleness when a
 * publisher alone is cut off from Redis while the other replicas are not.
 */
export const CACHE_TTL_MS = 60_000;

export function createCaches(bus: CacheBus) {
  // Bound to the bus: bypassed while this replica cannot hear the others' invalidations.
  const caches = {
    projects: new ReadThroughCache<ProjectRecord | null>(1_000, CACHE_TTL_MS, bus),
    roles: new ReadThroughCache<Role | null>(50_000, CACHE_TTL_MS, bus),
    folders: new ReadThroughCache<FolderSnapshot | null>(10_000, CACHE_TTL_MS, bus),
    accessTokens: new ReadThroughCache<AccessTokenState | null>(100_000, CACHE_TTL_MS, bus),
  };

  bus.subscribe((topic, key) => {
    switch (topic) {
      case topics.project:
        caches.projects.invalidateWhere((_k, p) => p?.id === key);
        caches.roles.invalidateWhere((k) => k.startsWith(`${key}:`));
        break;
      case topics.projectSlug:
        caches.projects.invalidate(`slug:${key}`);
        break;
      case topics.environment:
        caches.folders.invalidateWhere((k) => k.startsWith(`${key}:`));
        break;
      case topics.membership:
        caches.roles.invalidate(key);
        break;
      case topics.accessToken:
        caches.accessTokens.invalidate(key);
        break;
      case topics.clientSecret:
        caches.accessTokens.invalidateWhere((_k, t) => t?.clientSecretId === key);
        break;
      case topics.identity:
        caches.accessTokens.invalidateWhere((_k, t) => t?.identityId === key);
        caches.roles.invalidateWhere((k) => k.endsWith(`:identity:${key}`));
        break;
    }
  });
  // Frees the memory at once; the caches would also drop these entries on their next get.
  bus.onReset(() => {
    for (const c of Object.values(caches)) c.clear();
  });
  return caches;
}
export type Caches = ReturnType<typeof createCaches>;
