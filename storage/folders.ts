// Folders: normalised absolute paths inside an environment. `version` stamps caches.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface FolderRow {
  id: string;
  environmentId: string;
  parentId: string | null;
  name: string;
  path: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export function foldersStore(sql: Queryable) {
  return {
    async byPath(environmentId: string, path: string): Promise<FolderRow | undefined> {
      const [row] = await sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version, created_at, updated_at
        from folders where environment_id = ${environmentId} and path = ${path}`;
      return row;
    },

    /**
     * As byPath, inside a write's transaction: the row is held (FOR KEY SHARE, which
     * concurrent writers share) so a rename or delete of the folder waits for the write,
     * and a write that waited for one finds the folder gone from `path` instead of
     * writing under a path that no longer exists.
     */
    async byPathForWrite(environmentId: string, path: string): Promise<FolderRow | undefined> {
      const [row] = await sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version, created_at, updated_at
        from folders where environment_id = ${environmentId} and path = ${path} for key share`;
      return row;
    },

    /** The folder at `path` and every folder below it, parents first. */
    async subtree(environmentId: string, path: string): Promise<FolderRow[]> {
      const prefix = path === '/' ? '/' : `${path}/`;
      return sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version, created_at, updated_at from folders
        where environment_id = ${environmentId}
          and (path = ${path} or starts_with(path, ${prefix}))
        order by path`;
    },

    /** A folder by id alone, with the project it belongs to (reads that name only the folder). */
    async byIdWithProject(id: string): Promise<(FolderRow & { projectId: string }) | undefined> {
      const [row] = await sql<(FolderRow & { projectId: string })[]>`select f.id, f.environment_id, f.parent_id, f.name, f.path, f.version, f.created_at, f.updated_at, e.project_id
        from folders f join environments e on e.id = f.environment_id where f.id = ${id}`;
      return row;
    },

    async byId(environmentId: string, id: string): Promise<FolderRow | undefined> {
      const [row] = await sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version, created_at, updated_at
        from folders where environment_id = ${environmentId} and id = ${id}`;
      return row;
    },

    /** The direct sub-folders of `parentId`, by name. */
    async children(parentId: string): Promise<FolderRow[]> {
      return sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version, created_at, updated_at from folders
        where parent_id = ${parentId} order by name`;
    },

    /**
     * Locks the folder at `path` and every folder below it (FOR UPDATE) for the rest of
     * the transaction: secrets and sub-folders cannot be added under them meanwhile, so
     * what is counted before a delete is what the delete removes. Returns their ids.
     */
    async lockSubtree(environmentId: string, path: string): Promise<string[]> {
      const prefix = path === '/' ? '/' : `${path}/`;
      const rows = await sql<{ id: string }[]>`select id from folders
        where environment_id = ${environmentId} and (path = ${path} or starts_with(path, ${prefix}))
        order by id for update`;
      return rows.map((r) => r.id);
    },

    /** As lockSubtree, for every folder of the given environments. */
    async lockEnvironments(environmentIds: readonly string[]): Promise<string[]> {
      if (environmentIds.length === 0) return [];
      const rows = await sql<{ id: string }[]>`select id from folders
        where environment_id = any(${sql.array(environmentIds as string[])}::uuid[]) order by id for update`;
      return rows.map((r) => r.id);
    },

    /** Deletes the folder; its sub-folders and their secrets go with it (cascade). */
    async remove(id: string): Promise<boolean> {
      const rows = await sql`delete from folders where id = ${id} returning id`;
      return rows.length === 1;
    },

    async insert(f: { environmentId: string; parentId: string; parentPath: string; name: string }): Promise<FolderRow> {
      const id = randomUUID();
      const path = f.parentPath === '/' ? `/${f.name}` : `${f.parentPath}/${f.name}`;
      const [row] = await sql<FolderRow[]>`insert into folders (id, environment_id, parent_id, name, path)
        values (${id}, ${f.environmentId}, ${f.parentId}, ${f.name}, ${path})
        returning id, environment_id, parent_id, name, path, version, created_at, updated_at`;
      return row!;
    },

    /**
     * Renames the folder at `oldPath` to `name` and moves every folder below it to the
     * new prefix, in one statement; their versions are bumped so cached snapshots of the
     * old paths are stale. Secrets are bound to folder ids, not paths: none is rewritten.
     */
    async renameSubtree(environmentId: string, r: { id: string; name: string; oldPath: string; newPath: string }): Promise<FolderRow[]> {
      const prefix = `${r.oldPath}/`;
      return sql<FolderRow[]>`update folders
        set name = case when id = ${r.id} then ${r.name} else name end,
          path = ${r.newPath} || substr(path, ${r.oldPath.length + 1}::int),
          version = version + 1, updated_at = now()
        where environment_id = ${environmentId} and (path = ${r.oldPath} or starts_with(path, ${prefix}))
        returning id, environment_id, parent_id, name, path, version, created_at, updated_at`;
    },

    /** Called in the transaction of every change to the folder's secrets. */
    async bumpVersion(folderId: string): Promise<number> {
      const [row] = await sql<{ version: number }[]>`update folders set version = version + 1, updated_at = now()
        where id = ${folderId} returning version`;
      return row!.version;
    },
  };
}
export type FoldersStore = ReturnType<typeof foldersStore>;
