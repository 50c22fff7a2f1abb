// Projects with their environments (and the root folder each environment always has).
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface EnvironmentRow {
  id: string;
  projectId: string;
  name: string;
  slug: string;
  position: number;
}

export interface ProjectRow {
  id: string;
  orgId: string;
  name: string;
  slug: string;
  dataKeyId: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What the hot path needs of a project, loaded in one query. */
export interface ProjectRecord extends ProjectRow {
  wrappedDataKey: Buffer;
  environments: EnvironmentRow[];
}

export function projectsStore(sql: Queryable) {
  async function load(where: 'id' | 'slug', value: string): Promise<ProjectRecord | undefined> {
    // PostgreSQL text cannot hold a NUL, so no row has one; sending it would be an error.
    if (value.includes('\u0000')) return undefined;
    const rows = await sql<(ProjectRow & { wrappedDataKey: Buffer })[]>`
      select p.id, p.org_id, p.name, p.slug, p.data_key_id, p.created_at, p.updated_at, k.wrapped as wrapped_data_key
      from projects p join crypto_keys k on k.id = p.data_key_id
      where ${where === 'id' ? sql`p.id = ${value}` : sql`p.slug = ${value}`}`;
    const p = rows[0];
    if (!p) return undefined;
    const environments = await sql<EnvironmentRow[]>`
      select id, project_id, name, slug, position from environments where project_id = ${p.id} order by position, created_at`;
    return { ...p, environments };
  }

  return {
    bySlug: (slug: string) => load('slug', slug),
    byId: (id: string) => load('id', id),

    async list(): Promise<ProjectRow[]> {
      return sql<ProjectRow[]>`select id, org_id, name, slug, data_key_id, created_at, updated_at from projects order by created_at, id`;
    },

    /**
     * Projects with their environments (no key material), in two queries: every project,
     * or only those where the user or identity holds a membership (any role but no-access: such a member may not even see the project).
     */
    async listWithEnvironments(member?: { userId: string } | { identityId: string }): Promise<(ProjectRow & { environments: EnvironmentRow[] })[]> {
      const filter = !member
        ? sql`true`
        : 'userId' in member
          ? sql`exists (select 1 from project_memberships m where m.project_id = p.id and m.user_id = ${member.userId} and m.role <> 'no-access')`
          : sql`exists (select 1 from project_memberships m where m.project_id = p.id and m.identity_id = ${member.identityId} and m.role <> 'no-access')`;
      const projects = await sql<ProjectRow[]>`select p.id, p.org_id, p.name, p.slug, p.data_key_id, p.created_at, p.updated_at
        from projects p where ${filter} order by p.created_at, p.id`;
      if (projects.length === 0) return [];
      const envs = await sql<EnvironmentRow[]>`select id, project_id, name, slug, position from environments
        where project_id = any(${sql.array(projects.map((p) => p.id))}::uuid[]) order by position, created_at`;
      const byProject = new Map<string, EnvironmentRow[]>(projects.map((p) => [p.id, []]));
      for (const e of envs) byProject.get(e.projectId)?.push(e);
      return projects.map((p) => ({ ...p, environments: byProject.get(p.id)! }));
    },

    /**
     * The data key new values of the project are sealed under, read inside the writing
     * transaction (never from a cache: an online re-key may have replaced it) and held
     * (FOR KEY SHARE) until the commit, so a re-key cannot delete it under a writer that
     * has not committed the rows it sealed with it.
     */
    async sealingKey(id: string): Promise<{ id: string; wrapped: Buffer } | undefined> {
      const [row] = await sql<{ id: string; wrapped: Buffer }[]>`select k.id, k.wrapped
        from projects p join crypto_keys k on k.id = p.data_key_id where p.id = ${id} for key share of k`;
      return row;
    },

    /** Locks the project row for the rest of the transaction (serialises admin changes). */
    async lockForUpdate(id: string): Promise<boolean> {
      const rows = await sql`select id from projects where id = ${id} for update`;
      return rows.length === 1;
    },

    async update(id: string, u: { name?: string; slug?: string }): Promise<void> {
      await sql`update projects set name = coalesce(${u.name ?? null}, name), slug = coalesce(${u.slug ?? null}, slug),
        updated_at = now() where id = ${id}`;
    },

    /**
     * Deletes the project (environments, folders, secrets, versions and memberships go
     * with it by cascade) and then its data keys: nothing sealed under them remains.
     */
    async remove(id: string): Promise<boolean> {
      const [row] = await sql<{ dataKeyId: string; previousDataKeyId: string | null }[]>`delete from projects where id = ${id}
        returning data_key_id, previous_data_key_id`;
      if (!row) return false;
      // The key an unfinished re-key was moving away from goes too.
      const keys = [row.dataKeyId, ...(row.previousDataKeyId ? [row.previousDataKeyId] : [])];
      await sql`delete from crypto_keys where id = any(${sql.array(keys)}::uuid[]) and purpose = 'project'`;
      return true;
    },

    async insert(p: { id?: string; orgId: string; name: string; slug: string; dataKeyId: string }): Promise<string> {
      const id = p.id ?? randomUUID();
      await sql`insert into projects (id, org_id, name, slug, data_key_id)
        values (${id}, ${p.orgId}, ${p.name}, ${p.slug}, ${p.dataKeyId})`;
      return id;
    },

    /** Creates the environment and its root folder. */
    async insertEnvironment(e: { projectId: string; name: string; slug: string; position: number }): Promise<EnvironmentRow> {
      const id = randomUUID();
      await sql`insert into environments (id, project_id, name, slug, position)
        values (${id}, ${e.projectId}, ${e.name}, ${e.slug}, ${e.position})`;
      await sql`insert into folders (id, environment_id, parent_id, name, path) values (${randomUUID()}, ${id}, null, 'root', '/')`;
      return { id, ...e };
    },

    /** The position after the last environment of the project. */
    async nextEnvironmentPosition(projectId: string): Promise<number> {
      const [row] = await sql<{ next: number }[]>`select coalesce(max(position) + 1, 0)::int as next
        from environments where project_id = ${projectId}`;
      return row!.next;
    },

    async updateEnvironment(id: string, u: { name?: string; slug?: string }): Promise<EnvironmentRow | undefined> {
      const [row] = await sql<EnvironmentRow[]>`update environments
        set name = coalesce(${u.name ?? null}, name), slug = coalesce(${u.slug ?? null}, slug), updated_at = now()
        where id = ${id} returning id, project_id, name, slug, position`;
      return row;
    },

    /** Deletes the environment with its folders and secrets (cascade). */
    async removeEnvironment(id: string): Promise<boolean> {
      const rows = await sql`delete from environments where id = ${id} returning id`;
      return rows.length === 1;
    },
  };
}
export type ProjectsStore = ReturnType<typeof projectsStore>;
