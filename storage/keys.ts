// Wrapped data keys and the canary. Only wrapped bytes ever pass through here.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

/**
 * 'identity': a key of one identity's auth configuration (Kubernetes Auth's reviewer JWT);
 * 'webhook': a key of one webhook (its URL and signing key).
 */
export type KeyPurpose = 'system' | 'project' | 'audit' | 'identity' | 'webhook';

export interface WrappedKeyRow {
  id: string;
  purpose: KeyPurpose;
  rootKeyVersion: number;
  wrapped: Buffer;
}

/**
 * A data key offered under a root key version that is no longer the current one: the
 * process read its version before a rotation committed and must be restarted with the
 * new ENCRYPTION_KEY. Storing the key would leave it unreadable to every other replica.
 */
export class StaleRootKeyVersionError extends Error {
  override readonly name = 'StaleRootKeyVersionError';
  constructor(readonly rootKeyVersion: number) {
    super(
      `refusing a data key wrapped under root key version ${rootKeyVersion}: it is not the current root key version ` +
        '(the root key was rotated after this process started); restart it with the current ENCRYPTION_KEY',
    );
  }
}

/** The foreign key from crypto_keys.root_key_version to crypto_root_key (migration root_key_version). */
const CURRENT_VERSION_CONSTRAINT = 'crypto_keys_root_key_current';

export interface CanaryRow {
  keyId: string;
  blob: Buffer;
}

export function keysStore(sql: Queryable) {
  return {
    async insert(key: { id?: string; purpose: KeyPurpose; rootKeyVersion: number; wrapped: Buffer }): Promise<string> {
      const id = key.id ?? randomUUID();
      try {
        await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped)
          values (${id}, ${key.purpose}, ${key.rootKeyVersion}, ${key.wrapped})`;
      } catch (err) {
        const e = err as { code?: unknown; constraint_name?: unknown };
        if (e.code === '23503' && e.constraint_name === CURRENT_VERSION_CONSTRAINT) {
          throw new StaleRootKeyVersionError(key.rootKeyVersion);
        }
        throw err;
      }
      return id;
    },
    async get(id: string): Promise<WrappedKeyRow | undefined> {
      const [row] = await sql<WrappedKeyRow[]>`select id, purpose, root_key_version, wrapped from crypto_keys where id = ${id}`;
      return row;
    },
    /** The audit trail's key (there is at most one). */
    async audit(): Promise<WrappedKeyRow | undefined> {
      const [row] = await sql<WrappedKeyRow[]>`select id, purpose, root_key_version, wrapped from crypto_keys where purpose = 'audit'`;
      return row;
    },
    async all(): Promise<WrappedKeyRow[]> {
      return sql<WrappedKeyRow[]>`select id, purpose, root_key_version, wrapped from crypto_keys order by created_at, id`;
    },
    /** Root key versions in use; one after any completed rotation. */
    async rootKeyVersions(): Promise<number[]> {
      const rows = await sql<{ v: number }[]>`select distinct root_key_version as v from crypto_keys order by v`;
      return rows.map((r) => r.v);
    },
    /** The version new data keys must be wrapped under. */
    async currentRootKeyVersion(): Promise<number> {
      const [row] = await sql<{ version: number }[]>`select version from crypto_root_key where id = 1`;
      if (!row) throw new Error('crypto_root_key has no row (migration root_key_version not applied)');
      return row.version;
    },
    /**
     * Rotation only, inside its transaction, after `set constraints
     * crypto_keys_root_key_current deferred`: every key must be re-wrapped to `version`
     * before the commit, or the commit fails.
     */
    async setCurrentRootKeyVersion(version: number): Promise<void> {
      await sql`update crypto_root_key set version = ${version} where id = 1`;
    },

    async updateWrapped(id: string, rootKeyVersion: number, wrapped: Buffer): Promise<void> {
      await sql`update crypto_keys set wrapped = ${wrapped}, root_key_version = ${rootKeyVersion} where id = ${id}`;
    },
    /** The current client-secret MAC key: the system key the canary is sealed with. */
    async currentMacKey(): Promise<{ id: string; wrapped: Buffer } | undefined> {
      const [row] = await sql<{ id: string; wrapped: Buffer }[]>`select k.id, k.wrapped from crypto_canary c
        join crypto_keys k on k.id = c.key_id where c.id = 1`;
      return row;
    },
    /**
     * Holds the key row against deletion until the transaction ends (FOR KEY SHARE);
     * false when it is gone already (a rekey retired it).
     */
    async holdKey(id: string): Promise<boolean> {
      const rows = await sql`select id from crypto_keys where id = ${id} for key share`;
      return rows.length === 1;
    },
    /** The canary, locked for the rest of the transaction (rekey replaces it). */
    async canaryForUpdate(): Promise<CanaryRow | undefined> {
      const [row] = await sql<CanaryRow[]>`select key_id, blob from crypto_canary where id = 1 for update`;
      return row;
    },
    /** rekey: the canary sealed under a new system key. */
    async replaceCanary(keyId: string, blob: Buffer): Promise<void> {
      await sql`update crypto_canary set key_id = ${keyId}, blob = ${blob}, created_at = now() where id = 1`;
    },
    /**
     * rekey: system keys that are neither the canary's nor named by any client secret
     * (old MAC key versions nothing uses any more) are deleted. Returns how many, and how
     * many client secrets still name an older version.
     */
    async retireMacKeys(): Promise<{ deleted: number; secretsOnOldKeys: number }> {
      // Secrets that can never log in again (revoked, expired, used up) do not keep an old
      // key alive: their hash is replaced by zeros (never a MAC) under the current key.
      await sql`update identity_client_secrets set secret_hash = ${Buffer.alloc(32)},
          mac_key_id = (select key_id from crypto_canary where id = 1)
        where mac_key_id <> (select key_id from crypto_canary where id = 1)
          and (is_revoked or (ttl > 0 and created_at + make_interval(secs => ttl) <= now())
            or (num_uses_limit > 0 and num_uses >= num_uses_limit))`;
      const deleted = await sql`delete from crypto_keys k where k.purpose = 'system'
        and k.id <> (select key_id from crypto_canary where id = 1)
        and not exists (select 1 from identity_client_secrets s where s.mac_key_id = k.id) returning k.id`;
      const [left] = await sql<{ n: number }[]>`select count(*)::int as n from identity_client_secrets
        where mac_key_id <> (select key_id from crypto_canary where id = 1)`;
      return { deleted: deleted.length, secretsOnOldKeys: left!.n };
    },
    async canary(): Promise<CanaryRow | undefined> {
      const [row] = await sql<CanaryRow[]>`select key_id, blob from crypto_canary where id = 1`;
      return row;
    },
    /** Returns false when another replica wrote the canary first. */
    async insertCanary(keyId: string, blob: Buffer): Promise<boolean> {
      const rows = await sql`insert into crypto_canary (id, key_id, blob) values (1, ${keyId}, ${blob})
        on conflict (id) do nothing returning id`;
      return rows.length === 1;
    },
  };
}
export type KeysStore = ReturnType<typeof keysStore>;
