// Project tags (Infisical's secret tags): create, list, change, delete; what secrets
// carry them is written with the secret (secrets.ts, tagIds) and read with it.
import type { Store, TxStores } from '../../storage/index.js';
import type { ProjectRecord } from '../../storage/projects.js';
import type { TagRow } from '../../storage/secretTags.js';
import { AppError } from '../errors.js';
import { isUuid, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics, type Caches } from './caches.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { CONTROL_CHARACTER, validateName } from './text.js';

/** A tag as a secret carries it in read answers. */
export interface TagRef {
  id: string;
  slug: string;
  name: string;
  color: string | null;
}

export const tagRef = (t: TagRow): TagRef => ({ id: t.id, slug: t.slug, name: t.name, color: t.color });

/** Most tags one project may hold, and one secret carry. */
export const MAX_TAGS = 500;
export const MAX_TAGS_PER_SECRET = 50;

const SLUG = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

function validateSlug(raw: string): string {
  const slug = raw.trim();
  if (slug.length < 1 || slug.length > 64 || !SLUG.test(slug)) {
    throw new AppError('VALIDATION', 'slug must be 1 to 64 lowercase letters and digits, separated by single - or _');
  }
  return slug;
}

function validateColor(raw: string | null | undefined): string | null | undefined {
  if (raw === undefined || raw === null) return raw;
  const c = raw.trim();
  if (c.length > 32 || CONTROL_CHARACTER.test(c)) throw new AppError('VALIDATION', 'color must be at most 32 characters without control characters');
  return c;
}

/**
 * The tags `ids` name, in the project, inside a write's transaction; any id that is not
 * one of the project's tags is a 422 naming it (never dropped).
 */
export async function tagsForWrite(s: Pick<TxStores, 'secretTags'>, project: ProjectRecord, ids: readonly string[]): Promise<TagRow[]> {
  const unique = [...new Set(ids.map((i) => i.toLowerCase()))];
  if (unique.length > MAX_TAGS_PER_SECRET) throw new AppError('VALIDATION', `tagIds may name at most ${MAX_TAGS_PER_SECRET} tags`);
  if (unique.length === 0) return [];
  const all = await s.secretTags.ofProject(project.id);
  const out: TagRow[] = [];
  for (const id of unique) {
    const t = isUuid(id) ? all.find((x) => x.id === id) : undefined;
    if (!t) throw new AppError('VALIDATION', `tagIds: '${id.slice(0, 64)}' is not a tag of project '${project.slug}'`);
    out.push(t);
  }
  return out;
}

export interface TagsDeps {
  store: { secretTags: Pick<Store['secretTags'], 'ofProject'> };
  access: Pick<AccessControl, 'authorize'>;
  changes: Pick<WritePipeline, 'inProject'>;
  caches: Pick<Caches, 'tags'>;
}

const tagNotFound = (id: string) => new AppError('NOT_FOUND', `Tag with ID '${id.slice(0, 64)}' not found`);

export function tagsDomain(deps: TagsDeps) {
  const { store, access, changes, caches } = deps;

  async function lockTag(s: TxStores, project: ProjectRecord, id: string) {
    if (!isUuid(id)) throw tagNotFound(id);
    const t = await s.secretTags.byIdForUpdate(project.id, id.toLowerCase());
    if (!t) throw tagNotFound(id);
    return t;
  }

  return {
    /** The project's tags (cached; every replica drops them when one changes). */
    of(project: ProjectRecord): Promise<TagRow[]> {
      return caches.tags.get(project.id, () => store.secretTags.ofProject(project.id));
    },

    async list(actor: Actor | SystemActor, ref: ProjectRef): Promise<TagRow[]> {
      const { project } = await access.authorize(actor, ref, 'secrets:read');
      return store.secretTags.ofProject(project.id);
    },

    async get(actor: Actor | SystemActor, ref: ProjectRef, by: { id: string } | { slug: string }): Promise<TagRow> {
      const { project } = await access.authorize(actor, ref, 'secrets:read');
      const all = await store.secretTags.ofProject(project.id);
      const t = 'id' in by ? all.find((x) => x.id === by.id.toLowerCase()) : all.find((x) => x.slug === by.slug);
      if (!t) throw 'id' in by ? tagNotFound(by.id) : new AppError('NOT_FOUND', `Tag with slug '${by.slug.slice(0, 64)}' not found`);
      return t;
    },

    /** A tag; its name is the slug unless one is given. */
    async create(actor: Actor | SystemActor, input: { project: ProjectRef; slug: string; name?: string; color?: string | null; origin?: Origin }): Promise<TagRow> {
      const grant = await changes.inProject(actor, input.project, 'secrets:write', input.origin);
      const slug = validateSlug(input.slug);
      const name = input.name === undefined ? slug : validateName(input.name, 'name');
      const color = validateColor(input.color) ?? null;
      const { project } = grant;
      return grant.run(async ({ s, audit, invalidate }) => {
        if ((await s.secretTags.ofProject(project.id)).length >= MAX_TAGS) throw new AppError('VALIDATION', `A project may hold at most ${MAX_TAGS} tags`);
        const t = await s.secretTags.insert({ projectId: project.id, slug, name, color });
        if (!t) throw new AppError('BAD_REQUEST', `Tag '${slug}' already exists in project '${project.slug}'`);
        await audit({ eventType: 'create-tag', projectId: project.id, metadata: { tagId: t.id, slug, name } });
        invalidate(topics.tags, project.id);
        return t;
      });
    },

    /**
     * Changes a tag's slug, name or colour. A tag named by its slug (name = slug, as every
     * tag made without a name) keeps being so when only its slug changes.
     */
    async update(actor: Actor | SystemActor, input: { project: ProjectRef; id: string; slug?: string; name?: string; color?: string | null; origin?: Origin }): Promise<TagRow> {
      const grant = await changes.inProject(actor, input.project, 'secrets:write', input.origin);
      const slug = input.slug === undefined ? undefined : validateSlug(input.slug);
      const givenName = input.name === undefined ? undefined : validateName(input.name, 'name');
      const color = validateColor(input.color);
      const { project } = grant;
      return grant.run(async ({ s, audit, invalidate }) => {
        const cur = await lockTag(s, project, input.id);
        if (slug !== undefined && slug !== cur.slug && (await s.secretTags.bySlug(project.id, slug))) {
          throw new AppError('BAD_REQUEST', `Tag '${slug}' already exists in project '${project.slug}'`);
        }
        const name = givenName ?? (slug !== undefined && cur.name === cur.slug ? slug : undefined);
        const t = await s.secretTags.update(cur.id, { slug, name, color });
        await audit({
          eventType: 'update-tag',
          projectId: project.id,
          metadata: { tagId: t.id, slug: t.slug, name: t.name, ...(slug !== undefined && slug !== cur.slug ? { oldSlug: cur.slug } : {}), ...(t.name !== cur.name ? { oldName: cur.name } : {}) },
        });
        invalidate(topics.tags, project.id);
        return t;
      });
    },

    /** Deletes the tag; the secrets that carried it no longer do (their versions are unchanged). */
    async remove(actor: Actor | SystemActor, input: { project: ProjectRef; id: string; origin?: Origin }): Promise<TagRow> {
      const grant = await changes.inProject(actor, input.project, 'secrets:write', input.origin);
      const { project } = grant;
      return grant.run(async ({ s, audit, invalidate }) => {
        const cur = await lockTag(s, project, input.id);
        const touched = await s.secretTags.foldersOfTag(cur.id);
        await s.secretTags.remove(cur.id);
        await audit({ eventType: 'delete-tag', projectId: project.id, metadata: { tagId: cur.id, slug: cur.slug, foldersTouched: touched.length } });
        invalidate(topics.tags, project.id);
        for (const f of touched) invalidate(topics.environment, f.environmentId);
        return cur;
      });
    },
  };
}
export type TagsDomain = ReturnType<typeof tagsDomain>;
