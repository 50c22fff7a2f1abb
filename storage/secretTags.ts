// Project tags and the secrets that carry them.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface TagRow {
  id: string;
  projectId: string;
  slug: string;
  /** The display name (Infisical's `name`); equal to the slug unless one was given. */
  name: string;
  color: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = 'id, project_id, slug, name, color, created_at, updated_at';

interface Link {
  secretId: string;
  tagId: string;
}

/** Links grouped: the tag ids of each secret. */
function bySecret(links: readonly Link[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const l of links) {
    const tags = out.get(l.secretId);
    if (tags) tags.push(l.tagId);
    else out.set(l.secretId, [l.tagId]);
  }
  return out;
}

export function secretTagsStore(sql: Queryable) {
  return {
    async ofProject(projectId: string): Promise<TagRow[]> {
      return sql<TagRow[]>`select ${sql.unsafe(COLUMNS)} from secret_tags where project_id = ${projectId} order by slug`;
    },

    /** Undefined when the project already has a tag with that slug. */
    async insert(t: { projectId: string; slug: string; name?: string; color: string | null }): Promise<TagRow | undefined> {
      const [row] = await sql<TagRow[]>`insert into secret_tags (id, project_id, slug, name, color)
        values (${randomUUID()}, ${t.projectId}, ${t.slug}, ${t.name ?? t.slug}, ${t.color}) on conflict (project_id, slug) do nothing
        returning ${sql.unsafe(COLUMNS)}`;
      return row;
    },

    /** Locks the tag for the rest of the transaction. */
    async byIdForUpdate(projectId: string, id: string): Promise<TagRow | undefined> {
      const [row] = await sql<TagRow[]>`select ${sql.unsafe(COLUMNS)} from secret_tags where project_id = ${projectId} and id = ${id} for update`;
      return row;
    },

    async bySlug(projectId: string, slug: string): Promise<TagRow | undefined> {
      const [row] = await sql<TagRow[]>`select ${sql.unsafe(COLUMNS)} from secret_tags where project_id = ${projectId} and slug = ${slug}`;
      return row;
    },

    async update(id: string, u: { slug?: string; name?: string; color?: string | null }): Promise<TagRow> {
      const [row] = await sql<TagRow[]>`update secret_tags set
          slug = coalesce(${u.slug ?? null}, slug),
          name = coalesce(${u.name ?? null}, name),
          color = case when ${u.color !== undefined} then ${u.color ?? null} else color end,
          updated_at = now()
        where id = ${id} returning ${sql.unsafe(COLUMNS)}`;
      return row!;
    },

    async remove(id: string): Promise<void> {
      await sql`delete from secret_tags where id = ${id}`;
    },

    /** The folders (by id) whose secrets carry the tag: what its deletion changes. */
    async foldersOfTag(id: string): Promise<{ folderId: string; environmentId: string }[]> {
      return sql<{ folderId: string; environmentId: string }[]>`select distinct s.folder_id, f.environment_id
        from secret_tag_links l join secrets s on s.id = l.secret_id join folders f on f.id = s.folder_id where l.tag_id = ${id}`;
    },

    /** The tag ids each of `secretIds` carries. */
    async linksOf(secretIds: readonly string[]): Promise<Map<string, string[]>> {
      if (secretIds.length === 0) return new Map();
      return bySecret(
        await sql<Link[]>`select secret_id, tag_id from secret_tag_links
          where secret_id = any(${sql.array(secretIds as string[])}::uuid[])`,
      );
    },

    /**
     * The tag ids carried by the secrets of the folders, by secret id: read beside the
     * folders' rows (a 10,000-secret folder's ids as a parameter cost more than its rows).
     */
    async linksOfFolders(folderIds: readonly string[]): Promise<Map<string, string[]>> {
      if (folderIds.length === 0) return new Map();
      return bySecret(
        await sql<Link[]>`select l.secret_id, l.tag_id
          from secret_tag_links l join secrets s on s.id = l.secret_id
          where s.folder_id = any(${sql.array(folderIds as string[])}::uuid[])`,
      );
    },

    /** Replaces the tags `secretId` carries. */
    async setLinks(secretId: string, tagIds: readonly string[]): Promise<void> {
      await sql`delete from secret_tag_links where secret_id = ${secretId}`;
      if (tagIds.length === 0) return;
      await sql`insert into secret_tag_links ${sql(tagIds.map((tagId) => ({ secretId, tagId })))}`;
    },
  };
}
export type SecretTagsStore = ReturnType<typeof secretTagsStore>;
