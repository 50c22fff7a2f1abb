// Secrets as sealed blobs. Nothing here ever sees a plaintext value or comment.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface SecretCipherRow {
  id: string;
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
  skipMultilineEncoding: boolean;
  immutable: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface SecretVersionRow {
  id: string;
  secretId: string;
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
  actorType: string;
  actorId: string | null;
  createdAt: Date;
}

export function secretsStore(sql: Queryable) {
  return {
    async listByFolders(folderIds: readonly string[]): Promise<SecretCipherRow[]> {
      if (folderIds.length === 0) return [];
      return sql<SecretCipherRow[]>`select id, folder_id, key, version, value_blob, comment_blob,
          skip_multiline_encoding, immutable, created_at, updated_at
        from secrets where folder_id = any(${sql.array(folderIds as string[])}::uuid[]) order by key`;
    },

    async byKey(folderId: string, key: string): Promise<SecretCipherRow | undefined> {
      const [row] = await sql<SecretCipherRow[]>`select id, folder_id, key, version, value_blob, comment_blob,
          skip_multiline_encoding, immutable, created_at, updated_at
        from secrets where folder_id = ${folderId} and key = ${key}`;
      return row;
    },

    /** Locks the row for the rest of the transaction, so concurrent writers get distinct versions. */
    async byKeyForUpdate(folderId: string, key: string): Promise<SecretCipherRow | undefined> {
      const [row] = await sql<SecretCipherRow[]>`select id, folder_id, key, version, value_blob, comment_blob,
          skip_multiline_encoding, immutable, created_at, updated_at
        from secrets where folder_id = ${folderId} and key = ${key} for update`;
      return row;
    },

    async version(secretId: string, version: number): Promise<SecretVersionRow | undefined> {
      const [row] = await sql<SecretVersionRow[]>`select id, secret_id, folder_id, key, version, value_blob, comment_blob,
          actor_type, actor_id, created_at
        from secret_versions where secret_id = ${secretId} and version = ${version}`;
      return row;
    },

    /** Writes a new version (value, comment, name) and its version row; returns the updated row. */
    async update(u: {
      id: string;
      key: string;
      version: number;
      valueBlob: Buffer;
      commentBlob: Buffer | null;
      actorType: string;
      actorId: string | null;
    }): Promise<SecretCipherRow> {
      const [row] = await sql<SecretCipherRow[]>`update secrets set key = ${u.key}, version = ${u.version},
          value_blob = ${u.valueBlob}, comment_blob = ${u.commentBlob}, updated_at = now()
        where id = ${u.id}
        returning id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable, created_at, updated_at`;
      await sql`insert into secret_versions (id, secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id)
        values (${randomUUID()}, ${u.id}, ${row!.folderId}, ${u.key}, ${u.version}, ${u.valueBlob}, ${u.commentBlob}, ${u.actorType}, ${u.actorId})`;
      return row!;
    },

    /** Inserts the secret and its first version row. The id is chosen by the caller (it is part of the blob's AAD). */
    async insert(s: {
      id: string;
      folderId: string;
      key: string;
      valueBlob: Buffer;
      commentBlob: Buffer | null;
      skipMultilineEncoding?: boolean;
      immutable?: boolean;
      actorType: string;
      actorId: string | null;
    }): Promise<SecretCipherRow> {
      const [row] = await sql<SecretCipherRow[]>`insert into secrets
          (id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable)
        values (${s.id}, ${s.folderId}, ${s.key}, 1, ${s.valueBlob}, ${s.commentBlob},
          ${s.skipMultilineEncoding ?? false}, ${s.immutable ?? false})
        returning id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable, created_at, updated_at`;
      await sql`insert into secret_versions (id, secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id)
        values (${randomUUID()}, ${s.id}, ${s.folderId}, ${s.key}, 1, ${s.valueBlob}, ${s.commentBlob}, ${s.actorType}, ${s.actorId})`;
      return row!;
    },
  };
}
export type SecretsStore = ReturnType<typeof secretsStore>;
