// Wrapped data keys and the canary. Only wrapped bytes ever pass through here.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export type KeyPurpose = 'system' | 'project' | 'audit';

export interface WrappedKeyRow {
  id: string;
  purpose: KeyPurpose;
  rootKeyVersion: number;
  wrapped: Buffer;
}

export interface CanaryRow {
  keyId: string;
  blob: Buffer;
}

export function keysStore(sql: Queryable) {
  return {
    async insert(key: { id?: string; purpose: KeyPurpose; rootKeyVersion: number; wrapped: Buffer }): Promise<string> {
      const id = key.id ?? randomUUID();
      await sql`insert into crypto_keys (id, purpose, root_key_version, wrapped)
        values (${id}, ${key.purpose}, ${key.rootKeyVersion}, ${key.wrapped})`;
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

    async updateWrapped(id: string, rootKeyVersion: number, wrapped: Buffer): Promise<void> {
      await sql`update crypto_keys set wrapped = ${wrapped}, root_key_version = ${rootKeyVersion} where id = ${id}`;
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
