// Secret imports: which folders a folder also answers (by environment and path), in order.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface SecretImportRow {
  id: string;
  folderId: string;
  importEnvId: string;
  importPath: string;
  position: number;
  createdAt: Date;
  updatedAt: Date;
}

/** An import with where its folder is: an edge of the project's import graph. */
export interface ImportEdge {
  id: string;
  folderId: string;
  environmentId: string;
  path: string;
  importEnvId: string;
  importPath: string;
}

const COLUMNS = 'id, folder_id, import_env_id, import_path, position, created_at, updated_at';

export function secretImportsStore(sql: Queryable) {
  return {
    /** The imports of a folder, in position order. */
    async byFolder(folderId: string): Promise<SecretImportRow[]> {
      return sql<SecretImportRow[]>`select ${sql.unsafe(COLUMNS)} from secret_imports where folder_id = ${folderId} order by position, id`;
    },

    async byId(id: string): Promise<SecretImportRow | undefined> {
      const [row] = await sql<SecretImportRow[]>`select ${sql.unsafe(COLUMNS)} from secret_imports where id = ${id}`;
      return row;
    },

    /**
     * Serialises every change to the imports of one project until the transaction ends:
     * the cycle check and the renumbering read what no concurrent change can alter.
     */
    async lockProject(projectId: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtext('secret-imports'), hashtext(${projectId}))`;
    },

    /** Every import of the project, with the environment and path of the folder holding it. */
    async edgesOfProject(projectId: string): Promise<ImportEdge[]> {
      return sql<ImportEdge[]>`select si.id, si.folder_id, f.environment_id, f.path, si.import_env_id, si.import_path
        from secret_imports si
        join folders f on f.id = si.folder_id
        join environments e on e.id = f.environment_id
        where e.project_id = ${projectId}`;
    },

    /** Appends an import after the folder's others. */
    async insert(i: { folderId: string; importEnvId: string; importPath: string }): Promise<SecretImportRow> {
      const [row] = await sql<SecretImportRow[]>`insert into secret_imports (id, folder_id, import_env_id, import_path, position)
        values (${randomUUID()}, ${i.folderId}, ${i.importEnvId}, ${i.importPath},
          (select coalesce(max(position), 0) + 1 from secret_imports where folder_id = ${i.folderId}))
        returning ${sql.unsafe(COLUMNS)}`;
      return row!;
    },

    async setSource(id: string, importEnvId: string, importPath: string): Promise<void> {
      await sql`update secret_imports set import_env_id = ${importEnvId}, import_path = ${importPath}, updated_at = now() where id = ${id}`;
    },

    /** Gives the folder's imports the positions 1..n in the order of `ids`. */
    async renumber(ids: readonly string[]): Promise<void> {
      for (const [i, id] of ids.entries()) {
        await sql`update secret_imports set position = ${i + 1}, updated_at = case when position = ${i + 1} then updated_at else now() end where id = ${id}`;
      }
    },

    async remove(id: string): Promise<boolean> {
      const rows = await sql`delete from secret_imports where id = ${id} returning id`;
      return rows.length === 1;
    },
  };
}
export type SecretImportsStore = ReturnType<typeof secretImportsStore>;
