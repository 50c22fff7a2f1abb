// Custom project roles: a slug, a name and rules (stored as validated by the domain).
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';
import { macRow, roleMessage, type PrivilegeKey } from './privilege.js';

export interface ProjectRoleRow {
  id: string;
  projectId: string;
  slug: string;
  name: string;
  description: string | null;
  permissions: unknown;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export function projectRolesStore(sql: Queryable, privilegeKey?: PrivilegeKey) {
  /** MACs the row as written, version and rules included (storage/privilege.ts); answers it. */
  const sealed = async <R extends ProjectRoleRow | undefined>(row: R): Promise<R> => {
    if (row) await macRow(sql, privilegeKey, 'project_roles', row.id, roleMessage(row));
    return row;
  };
  return {
    async list(projectId: string): Promise<ProjectRoleRow[]> {
      return sql<ProjectRoleRow[]>`select * from project_roles where project_id = ${projectId} order by created_at, id`;
    },

    async byId(projectId: string, id: string): Promise<ProjectRoleRow | undefined> {
      const [row] = await sql<ProjectRoleRow[]>`select * from project_roles where project_id = ${projectId} and id = ${id}`;
      return row;
    },

    async bySlug(projectId: string, slug: string): Promise<ProjectRoleRow | undefined> {
      const [row] = await sql<ProjectRoleRow[]>`select * from project_roles where project_id = ${projectId} and slug = ${slug}`;
      return row;
    },

    /** The row locked for the rest of the transaction. */
    async byIdForUpdate(projectId: string, id: string): Promise<ProjectRoleRow | undefined> {
      const [row] = await sql<ProjectRoleRow[]>`select * from project_roles where project_id = ${projectId} and id = ${id} for update`;
      return row;
    },

    async insert(r: { projectId: string; slug: string; name: string; description: string | null; permissions: unknown }): Promise<ProjectRoleRow> {
      const [row] = await sql<ProjectRoleRow[]>`insert into project_roles (id, project_id, slug, name, description, permissions)
        values (${randomUUID()}, ${r.projectId}, ${r.slug}, ${r.name}, ${r.description}, ${sql.json(r.permissions as never)}) returning *`;
      return sealed(row!);
    },

    /** Changes what is given and bumps the version (cached rules are compiled per version). */
    async update(
      projectId: string,
      id: string,
      c: { slug?: string; name?: string; description?: string | null; permissions?: unknown },
    ): Promise<ProjectRoleRow | undefined> {
      const [row] = await sql<ProjectRoleRow[]>`update project_roles set
          slug = coalesce(${c.slug ?? null}, slug),
          name = coalesce(${c.name ?? null}, name),
          description = ${c.description === undefined ? sql`description` : c.description},
          permissions = ${c.permissions === undefined ? sql`permissions` : sql.json(c.permissions as never)},
          version = version + 1,
          updated_at = now()
        where project_id = ${projectId} and id = ${id} returning *`;
      return sealed(row);
    },

    async remove(projectId: string, id: string): Promise<ProjectRoleRow | undefined> {
      const [row] = await sql<ProjectRoleRow[]>`delete from project_roles where project_id = ${projectId} and id = ${id} returning *`;
      return row;
    },
  };
}
export type ProjectRolesStore = ReturnType<typeof projectRolesStore>;
