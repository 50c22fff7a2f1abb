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
  };
}
export type ProjectsStore = ReturnType<typeof projectsStore>;
