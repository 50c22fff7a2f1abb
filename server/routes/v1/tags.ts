// Project tags at Infisical's paths (both of them: /api/v1/workspace/:projectId/tags, where
// older clients call, and /api/v1/projects/:projectId/tags): list, one by id or slug,
// create {slug, name?, color}, change, delete; on the /workspace paths the answers also carry
// Infisical's keys there (workspaceTag, workspaceTags). Secrets carry them through tagIds on their writes.
import { z } from 'zod';
import type { TagRow } from '../../../storage/secretTags.js';
import { AppError } from '../../errors.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { isoString } from '../shape.js';

const tagSchema = z.object({
  id: z.string(),
  projectId: z.string(),
  slug: z.string(),
  name: z.string(),
  color: z.string().nullable(),
  createdAt: isoString,
  updatedAt: isoString,
});

const shape = (t: TagRow): z.infer<typeof tagSchema> => ({
  id: t.id,
  projectId: t.projectId,
  slug: t.slug,
  name: t.name,
  color: t.color,
  createdAt: t.createdAt.toISOString(),
  updatedAt: t.updatedAt.toISOString(),
});

const slug = z.string({ error: 'slug must be a string' }).max(64, 'slug must be at most 64 characters');
const color = z.string({ error: 'color must be a string' }).max(32, 'color must be at most 32 characters').nullable();
/**
 * What Terraform's infisical_project_tag sends (terraform-provider-infisical
 * internal/client/model.go CreateProjectTagRequest {name, color, slug, projectId} /
 * UpdateProjectTagRequest {name?, color?, slug?, projectId, tagId}): the project's id and
 * the tag's id again (must be the path's), and the tag's display `name`, stored apart from
 * its slug (a tag made without one, or with `""`, is named by its slug).
 */
const name = z.string({ error: 'name must be a string' }).max(64, 'name must be at most 64 characters');
const sameAsPath = { projectId: z.string({ error: 'projectId must be a string' }).max(64).optional() };
const createBody = z.object({ slug, name: name.optional(), color: color.optional(), ...sameAsPath });
const updateBody = z.object({ slug: slug.optional(), name: name.optional(), color: color.optional(), ...sameAsPath, tagId: z.string({ error: 'tagId must be a string' }).max(64).optional() });

/** The fields that repeat the path: each must agree, or the request is a 422 naming it. */
function checkRepeats(body: { projectId?: string; tagId?: string }, params: { projectId: string; tagId?: string }): void {
  if (body.projectId !== undefined && body.projectId.toLowerCase() !== params.projectId.toLowerCase()) {
    throw new AppError('VALIDATION', 'projectId must be the project id in the path');
  }
  if (body.tagId !== undefined && body.tagId.toLowerCase() !== (params.tagId ?? '').toLowerCase()) throw new AppError('VALIDATION', 'tagId must be the tag id in the path');
}
const project = z.object({ projectId: z.string().max(64) });
const oneParams = project.extend({ tagId: z.string().max(64) });
const slugParams = project.extend({ tagSlug: z.string().max(64) });

export function registerTagRoutes(api: Api, svc: Services) {
  for (const base of ['/api/v1/workspace/:projectId/tags', '/api/v1/projects/:projectId/tags'] as const) {
    // Infisical's /api/v1/workspace/... tag routes answer {workspaceTag} / {workspaceTags}
    // (what Terraform parses); `tag` / `tags` stay beside them for the clients of today.
    const legacy = base.startsWith('/api/v1/workspace/');
    const oneTag = legacy ? z.object({ tag: tagSchema, workspaceTag: tagSchema }) : z.object({ tag: tagSchema });
    const tagList = legacy ? z.object({ tags: z.array(tagSchema), workspaceTags: z.array(tagSchema) }) : z.object({ tags: z.array(tagSchema) });
    const one = (t: TagRow) => {
      const json = shape(t);
      return { body: legacy ? { tag: json, workspaceTag: json } : { tag: json } };
    };
    api.get(base, { caller: 'any', summary: 'The project\'s tags', params: project, response: tagList }, async ({ actor, params }) => {
      const tags = (await svc.tags.list(actor, { id: params.projectId })).map(shape);
      return { body: legacy ? { tags, workspaceTags: tags } : { tags } };
    });

    api.get(`${base}/slug/:tagSlug`, { caller: 'any', summary: 'One tag by slug', params: slugParams, response: oneTag }, async ({ actor, params }) => one(await svc.tags.get(actor, { id: params.projectId }, { slug: params.tagSlug })));

    api.get(`${base}/:tagId`, { caller: 'any', summary: 'One tag by id', params: oneParams, response: oneTag }, async ({ actor, params }) => one(await svc.tags.get(actor, { id: params.projectId }, { id: params.tagId })));

    api.post(base, { caller: 'any', summary: 'Create a tag {slug, name?, color} (the name is the slug unless given)', params: project, body: createBody, response: oneTag }, async ({ actor, params, body, origin }) => {
      checkRepeats(body, params);
      return one(await svc.tags.create(actor, { project: { id: params.projectId }, slug: body.slug, name: body.name || undefined, color: body.color, origin }));
    });

    api.patch(`${base}/:tagId`, { caller: 'any', summary: 'Change a tag\'s slug, name or colour', params: oneParams, body: updateBody, response: oneTag }, async ({ actor, params, body, origin }) => {
      checkRepeats(body, params);
      if (body.slug === undefined && !body.name && body.color === undefined) throw new AppError('VALIDATION', 'Give slug, name or color to change');
      return one(await svc.tags.update(actor, { project: { id: params.projectId }, id: params.tagId, slug: body.slug, name: body.name || undefined, color: body.color, origin }));
    });

    api.delete(`${base}/:tagId`, { caller: 'any', summary: 'Delete a tag (secrets no longer carry it)', params: oneParams, response: oneTag }, async ({ actor, params, origin }) => one(await svc.tags.remove(actor, { project: { id: params.projectId }, id: params.tagId, origin })));
  }
}
