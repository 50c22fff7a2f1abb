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
}

export function foldersStore(sql: Queryable) {
  return {
    async byPath(environmentId: string, path: string): Promise<FolderRow | undefined> {
      const [row] = await sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version
        from folders where environment_id = ${environmentId} and path = ${path}`;
      return row;
    },

    /** The folder at `path` and every folder below it, parents first. */
    async subtree(environmentId: string, path: string): Promise<FolderRow[]> {
      const prefix = path === '/' ? '/' : `${path}/`;
      return sql<FolderRow[]>`select id, environment_id, parent_id, name, path, version from folders
        where environment_id = ${environmentId}
          and (path = ${path} or starts_with(path, ${prefix}))
        order by path`;
    },

    async insert(f: { environmentId: string; parentId: string; parentPath: string; name: string }): Promise<FolderRow> {
      const id = randomUUID();
      const path = f.parentPath === '/' ? `/${f.name}` : `${f.parentPath}/${f.name}`;
      const [row] = await sql<FolderRow[]>`insert into folders (id, environment_id, parent_id, name, path)
        values (${id}, ${f.environmentId}, ${f.parentId}, ${f.name}, ${path})
        returning id, environment_id, parent_id, name, path, version`;
      return row!;
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
