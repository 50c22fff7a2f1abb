// The hot path's read-through caches and the invalidation topics that keep them
// true. A change publishes on the bus inside the same code path that committed it;
// other replicas hear it through Redis.
import { ReadThroughCache, type CacheBus } from '../../storage/cache.js';
import type { AccessTokenState, LoginLookup } from '../../storage/identities.js';
import type { FolderRow } from '../../storage/folders.js';
import type { MemberRoleRecord } from '../../storage/memberships.js';
import type { ProjectRecord } from '../../storage/projects.js';
import type { SecretImportRow } from '../../storage/secretImports.js';
import type { TagRow } from '../../storage/secretTags.js';
import type { SecretCipherRow } from '../../storage/secrets.js';

/** Ciphertext rows of a folder (and its sub-folders when recursive), as loaded together. */
export interface FolderSnapshot {
  folders: FolderRow[];
  rows: SecretCipherRow[];
  /** The tag ids each secret carries (by secret id; absent: none). */
  tagIds?: Map<string, string[]>;
}

export type ActorKind = 'identity' | 'user';

export const topics = {
  project: 'project', // key: project id
  projectSlug: 'project-slug', // key: slug
  environment: 'environment', // key: environment id (any folder or secret change inside it)
  membership: 'membership', // key: `${projectId}:${kind}:${actorId}`
  projectRoles: 'project-roles', // key: project id (a custom role changed: every member's cached role of it)
  accessToken: 'access-token', // key: token id
  clientSecret: 'client-secret', // key: client secret id
  identity: 'identity', // key: identity id
  userSession: 'user-session', // key: session id
  tags: 'tags', // key: project id (a tag created, changed or deleted)
  macKey: 'mac-key', // key: '' (the client-secret MAC key rotated, or old ones retired)
} as const;
export type Topic = (typeof topics)[keyof typeof topics];

/**
 * How long an entry may live without an invalidation: the bound on staleness when a
 * publisher alone is cut off from Redis while the other replicas are not.
 */
export const CACHE_TTL_MS = 60_000;

/**
 * Entry bounds. An entry lives CACHE_TTL_MS after its load at most (swept every
 * CACHE_SWEEP_MS), so what is cached is what was used in the last minute, and these caps
 * only bind under an unusual spread of keys. Sizes measured on the main thread's heap:
 * - projects: ~1 KB each (record with its environments); 1,000 → ~1 MB.
 * - roles: ~200 B each (key `project:kind:id` and a role); 10,000 → ~2 MB: every identity and
 *   person of a large installation, per project they use within a minute.
 * - folders: a snapshot holds a folder's ciphertext rows, ~300 B per secret (the seed's 14
 *   secrets: ~5 KB); 2,000 → ~10 MB at 14 secrets; folders of 2,000 secrets (~1.2 MB each
 *   by estimateBytes) are bound by CACHE_BYTE_SHARES.folders, not by this count.
 * - imports: a folder's import rows (~200 B each; most folders have none, ~100 B); 2,000 → < 1 MB.
 * - accessTokens: ~400 B each; 10,000 → ~4 MB. A token is looked up while its holder syncs
 *   (ESO: login, read, revoke within seconds), so entries follow the syncs of the last
 *   minute. A revoked or expired token (null) is never stored: it leaves on revocation
 *   (invalidated on every replica) and does not come back.
 * - logins: ~700 B each (a client id, its Universal Auth and the wrapped MAC key); 10,000
 *   → ~7 MB, one per client that logged in within a minute. An unknown client id is never
 *   stored: guessing ids cannot fill it.
 */
export const CACHE_LIMITS = { projects: 1_000, roles: 10_000, folders: 2_000, accessTokens: 10_000, imports: 2_000, logins: 10_000 } as const;
/**
 * Each cache's share of CACHE_MAX_BYTES (estimated bytes, storage/cache.ts estimateBytes):
 * the entry counts above bind for small entries, these for large ones (a folder of
 * 2,000 secrets is ~1 MB). The user sessions' cache (users.ts) takes SESSIONS_SHARE.
 */
export const CACHE_BYTE_SHARES = { projects: 0.04, roles: 0.08, folders: 0.6, accessTokens: 0.08, imports: 0.04, tags: 0.04, logins: 0.08 } as const;
export const SESSIONS_SHARE = 0.04;
/** CACHE_MAX_BYTES's default: 64 MiB. */
export const DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024;
/** How often expired entries are dropped (services.ts runs the sweep). */
export const CACHE_SWEEP_MS = 30_000;

export function createCaches(bus: CacheBus, maxBytes = DEFAULT_CACHE_MAX_BYTES) {
  const bounds = (name: keyof typeof CACHE_BYTE_SHARES, maxEntries: number) => ({ maxEntries, maxBytes: Math.floor(maxBytes * CACHE_BYTE_SHARES[name]) });
  // Bound to the bus: bypassed while this replica cannot hear the others' invalidations.
  const caches = {
    projects: new ReadThroughCache<ProjectRecord | null>(bounds('projects', CACHE_LIMITS.projects), CACHE_TTL_MS, bus),
    roles: new ReadThroughCache<MemberRoleRecord | null>(bounds('roles', CACHE_LIMITS.roles), CACHE_TTL_MS, bus),
    folders: new ReadThroughCache<FolderSnapshot | null>(bounds('folders', CACHE_LIMITS.folders), CACHE_TTL_MS, bus),
    accessTokens: new ReadThroughCache<AccessTokenState | null>(bounds('accessTokens', CACHE_LIMITS.accessTokens), CACHE_TTL_MS, bus, (state) => state !== null),
    /** The imports of a folder, keyed `${environmentId}:${folderId}` (dropped with the environment's folders). */
    imports: new ReadThroughCache<SecretImportRow[]>(bounds('imports', CACHE_LIMITS.imports), CACHE_TTL_MS, bus),
    /** A project's tags, keyed by project id. */
    tags: new ReadThroughCache<TagRow[]>(bounds('tags', CACHE_LIMITS.projects), CACHE_TTL_MS, bus),
    /**
     * What a login reads before its claim (storage loginLookup), keyed by client id: ESO logs
     * in on every sync. The claim decides on the identity's row as it is then, so a stale
     * entry can only refuse early (trusted IPs) or take the claim's slower path (MAC key).
     */
    logins: new ReadThroughCache<LoginLookup>(bounds('logins', CACHE_LIMITS.logins), CACHE_TTL_MS, bus, (found) => found.ua !== undefined),
  };

  bus.subscribe((topic, key) => {
    switch (topic) {
      case topics.project:
        caches.projects.invalidateWhere((_k, p) => p?.id === key);
        caches.roles.invalidateWhere((k) => k.startsWith(`${key}:`));
        break;
      case topics.tags:
        caches.tags.invalidate(key);
        break;
      case topics.projectSlug:
        caches.projects.invalidate(`slug:${key}`);
        break;
      case topics.environment:
        caches.folders.invalidateWhere((k) => k.startsWith(`${key}:`));
        caches.imports.invalidateWhere((k) => k.startsWith(`${key}:`));
        break;
      case topics.membership:
        caches.roles.invalidate(key);
        break;
      case topics.projectRoles:
        caches.roles.invalidateWhere((k) => k.startsWith(`${key}:`));
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
        caches.logins.invalidateWhere((_k, found) => found.ua?.identityId === key);
        break;
      case topics.macKey:
        caches.logins.clear();
        break;
    }
  });
  // Frees the memory at once; the caches would also drop these entries on their next get.
  const all = Object.values(caches);
  bus.onReset(() => {
    for (const c of all) c.clear();
  });
  return Object.assign(caches, {
    /** Drops expired entries of every cache; returns how many. */
    sweep(now = Date.now()): number {
      let n = 0;
      for (const c of all) n += c.sweep(now);
      return n;
    },
  });
}
export type Caches = ReturnType<typeof createCaches>;
