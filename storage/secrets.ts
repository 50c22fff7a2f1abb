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
  /** The data key the blobs are sealed under, and its wrapped bytes (read with the row, so they always match it). */
  dataKeyId: string;
  wrappedKey: Buffer;
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
  dataKeyId: string;
  wrappedKey: Buffer;
}

/** A secret as a cascading delete reports it: where it was and which version; no blob. */
export interface SecretInventoryRow {
  id: string;
  key: string;
  version: number;
  immutable: boolean;
  folderId: string;
  folderPath: string;
  environmentId: string;
}

/** Where a secret lives, for routes that name it by id only. */
export interface SecretLocation {
  id: string;
  folderId: string;
  folderPath: string;
  environmentId: string;
  projectId: string;
}

// Each row names the data key that sealed it and carries that key's wrapped bytes: during
// an online re-key rows under the old and the new key coexist, and a reader opens each
// with the key read in the same statement (a cached row stays openable after its key row
// is deleted: the wrapped bytes travel with it).
const COLUMNS = `id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable, created_at, updated_at,
  data_key_id, (select k.wrapped from crypto_keys k where k.id = data_key_id) as wrapped_key`;
const VERSION_COLUMNS = `id, secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id, created_at,
  data_key_id, (select k.wrapped from crypto_keys k where k.id = data_key_id) as wrapped_key`;

// A folder's rows without their data keys' wrapped bytes: those are read once per key
// after them (below), and the rows under one key share one Buffer. A 10,000-secret
// folder otherwise carried 10,000 copies, parsed from hex and held in the folder cache;
// and marking each key's first row in the same statement (a window function) cost a
// second sort: 50 of the embedded database's ~60 ms for that folder, on the main thread.
const LIST_COLUMNS = `id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable, created_at, updated_at, data_key_id`;
/** Reads of a folder's rows and keys before giving up on a key that went missing between them. */
const LIST_ATTEMPTS = 3;
/** Rows per part when a reader takes them as they come (listByFolders' onRows). */
export const LIST_PART_ROWS = 2000;
/** A part of a folder's rows, before their data keys' wrapped bytes are read. */
export type CipherRowPart = ReadonlyArray<Omit<SecretCipherRow, 'wrappedKey'>>;

export function secretsStore(sql: Queryable) {
  return {
    /**
     * The rows of the folders, by key. `onRows`: also handed over in parts of LIST_PART_ROWS
     * as they are read (one statement, a cursor), for a reader that works on them meanwhile;
     * only the first read's (a retry's rows are not), and without their wrapped keys yet.
     */
    async listByFolders(folderIds: readonly string[], onRows?: (part: CipherRowPart) => void): Promise<SecretCipherRow[]> {
      if (folderIds.length === 0) return [];
      for (let attempt = 1; ; attempt++) {
        type Row = Omit<SecretCipherRow, 'wrappedKey'> & { wrappedKey: Buffer | null };
        const query = sql<Row[]>`select ${sql.unsafe(LIST_COLUMNS)}
          from secrets where folder_id = any(${sql.array(folderIds as string[])}::uuid[]) order by key`;
        let rows: Row[];
        if (onRows && attempt === 1) {
          rows = [];
          for await (const part of query.cursor(LIST_PART_ROWS)) {
            for (const r of part) rows.push(r);
            onRows(part);
          }
        } else {
          rows = await query;
        }
        const keyIds = [...new Set(rows.map((r) => r.dataKeyId))];
        const wrapped = new Map<string, Buffer>();
        if (keyIds.length > 0) {
          const keys = await sql<{ id: string; wrapped: Buffer }[]>`select id, wrapped from crypto_keys where id = any(${sql.array(keyIds)}::uuid[])`;
          for (const k of keys) wrapped.set(k.id, k.wrapped);
        }
        // A key row cannot be deleted while a secret names it (foreign key): one missing
        // now means an online re-key moved these rows to another key and deleted the old
        // one in between, so the rows read again name the new key. Still missing after
        // that: null, as a row whose key is gone (opening fails: DecryptionFailed).
        if (wrapped.size < keyIds.length && attempt < LIST_ATTEMPTS) continue;
        for (const r of rows) r.wrappedKey = wrapped.get(r.dataKeyId) ?? null;
        return rows as SecretCipherRow[];
      }
    },

    async byKey(folderId: string, key: string): Promise<SecretCipherRow | undefined> {
      const [row] = await sql<SecretCipherRow[]>`select ${sql.unsafe(COLUMNS)}
        from secrets where folder_id = ${folderId} and key = ${key}`;
      return row;
    },

    /** Locks the row for the rest of the transaction, so concurrent writers get distinct versions. */
    async byKeyForUpdate(folderId: string, key: string): Promise<SecretCipherRow | undefined> {
      const [row] = await sql<SecretCipherRow[]>`select ${sql.unsafe(COLUMNS)}
        from secrets where folder_id = ${folderId} and key = ${key} for update`;
      return row;
    },

    /** Locks the row for the rest of the transaction. */
    async byIdForUpdate(id: string): Promise<SecretCipherRow | undefined> {
      const [row] = await sql<SecretCipherRow[]>`select ${sql.unsafe(COLUMNS)} from secrets where id = ${id} for update`;
      return row;
    },

    /** The secrets of the folder among `keys`. */
    async byKeys(folderId: string, keys: readonly string[]): Promise<SecretCipherRow[]> {
      if (keys.length === 0) return [];
      return sql<SecretCipherRow[]>`select ${sql.unsafe(COLUMNS)} from secrets
        where folder_id = ${folderId} and key = any(${sql.array(keys as string[])}::text[])`;
    },

    async locate(id: string): Promise<SecretLocation | undefined> {
      const [row] = await sql<SecretLocation[]>`select s.id, s.folder_id, f.path as folder_path, f.environment_id, e.project_id
        from secrets s join folders f on f.id = s.folder_id join environments e on e.id = f.environment_id
        where s.id = ${id}`;
      return row;
    },

    /** Names, versions and places (never blobs) of every secret in the folders, by environment, path and name. */
    async inventoryOfFolders(folderIds: readonly string[]): Promise<SecretInventoryRow[]> {
      if (folderIds.length === 0) return [];
      return sql<SecretInventoryRow[]>`select s.id, s.key, s.version, s.immutable, s.folder_id, f.path as folder_path, f.environment_id
        from secrets s join folders f on f.id = s.folder_id join environments e on e.id = f.environment_id
        where s.folder_id = any(${sql.array(folderIds as string[])}::uuid[])
        order by e.position, e.id, f.path, s.key`;
    },

    /** Marks the secret as never changing; false when it already was. */
    async markImmutable(id: string): Promise<boolean> {
      const rows = await sql`update secrets set immutable = true where id = ${id} and not immutable returning id`;
      return rows.length === 1;
    },

    /** Versions of a secret, newest first. */
    async versions(secretId: string, page: { offset: number; limit: number }): Promise<SecretVersionRow[]> {
      return sql<SecretVersionRow[]>`select ${sql.unsafe(VERSION_COLUMNS)}
        from secret_versions where secret_id = ${secretId}
        order by version desc offset ${page.offset} limit ${page.limit}`;
    },

    /** Deletes the secret and (cascade) its versions. */
    async remove(id: string): Promise<boolean> {
      const rows = await sql`delete from secrets where id = ${id} returning id`;
      return rows.length === 1;
    },

    /** Inserts many secrets and their first version rows in two statements. */
    async insertMany(
      rows: readonly {
        id: string;
        folderId: string;
        key: string;
        valueBlob: Buffer;
        commentBlob: Buffer | null;
        skipMultilineEncoding?: boolean;
      }[],
      actor: { actorType: string; actorId: string | null },
      /** The data key every blob was sealed under. */
      dataKeyId: string,
    ): Promise<SecretCipherRow[]> {
      if (rows.length === 0) return [];
      const secrets = rows.map((r) => ({
        id: r.id,
        folder_id: r.folderId,
        key: r.key,
        version: 1,
        value_blob: r.valueBlob,
        comment_blob: r.commentBlob,
        skip_multiline_encoding: r.skipMultilineEncoding ?? false,
        immutable: false,
        data_key_id: dataKeyId,
      }));
      const inserted = await sql<SecretCipherRow[]>`insert into secrets ${sql(secrets)} returning ${sql.unsafe(COLUMNS)}`;
      const versions = rows.map((r) => ({
        id: randomUUID(),
        secret_id: r.id,
        folder_id: r.folderId,
        key: r.key,
        version: 1,
        value_blob: r.valueBlob,
        comment_blob: r.commentBlob,
        actor_type: actor.actorType,
        actor_id: actor.actorId,
        data_key_id: dataKeyId,
      }));
      await sql`insert into secret_versions ${sql(versions)}`;
      const byId = new Map(inserted.map((r) => [r.id, r]));
      return rows.map((r) => byId.get(r.id)!);
    },

    async version(secretId: string, version: number): Promise<SecretVersionRow | undefined> {
      const [row] = await sql<SecretVersionRow[]>`select ${sql.unsafe(VERSION_COLUMNS)}
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
      /** Unchanged when absent. */
      skipMultilineEncoding?: boolean;
      actorType: string;
      actorId: string | null;
      /** The data key the blobs were sealed under. */
      dataKeyId: string;
    }): Promise<SecretCipherRow> {
      const [row] = await sql<SecretCipherRow[]>`update secrets set key = ${u.key}, version = ${u.version},
          value_blob = ${u.valueBlob}, comment_blob = ${u.commentBlob}, data_key_id = ${u.dataKeyId},
          skip_multiline_encoding = coalesce(${u.skipMultilineEncoding ?? null}::boolean, skip_multiline_encoding), updated_at = now()
        where id = ${u.id}
        returning ${sql.unsafe(COLUMNS)}`;
      await sql`insert into secret_versions (id, secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id, data_key_id)
        values (${randomUUID()}, ${u.id}, ${row!.folderId}, ${u.key}, ${u.version}, ${u.valueBlob}, ${u.commentBlob}, ${u.actorType}, ${u.actorId}, ${u.dataKeyId})`;
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
      /** The data key the blobs were sealed under. */
      dataKeyId: string;
    }): Promise<SecretCipherRow> {
      const [row] = await sql<SecretCipherRow[]>`insert into secrets
          (id, folder_id, key, version, value_blob, comment_blob, skip_multiline_encoding, immutable, data_key_id)
        values (${s.id}, ${s.folderId}, ${s.key}, 1, ${s.valueBlob}, ${s.commentBlob},
          ${s.skipMultilineEncoding ?? false}, ${s.immutable ?? false}, ${s.dataKeyId})
        returning ${sql.unsafe(COLUMNS)}`;
      await sql`insert into secret_versions (id, secret_id, folder_id, key, version, value_blob, comment_blob, actor_type, actor_id, data_key_id)
        values (${randomUUID()}, ${s.id}, ${s.folderId}, ${s.key}, 1, ${s.valueBlob}, ${s.commentBlob}, ${s.actorType}, ${s.actorId}, ${s.dataKeyId})`;
      return row!;
    },
  };
}
export type SecretsStore = ReturnType<typeof secretsStore>;
