// Project tags at Infisical's paths (both of them: /api/v1/workspace/:projectId/tags, where
// older clients call, and /api/v1/projects/:projectId/tags): list, one by id or slug,
// create {slug, color}, change, delete. Secrets carry them through tagIds on their writes.
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
const oneTag = z.object({ tag: tagSchema });

const shape = (t: TagRow): z.infer<typeof tagSchema> => ({
  id: t.id,
  projectId: t.projectId,
  slug: t.slug,
  name: t.slug,
  color: t.color,
  createdAt: t.createdAt.toISOString(),
  updatedAt: t.updatedAt.toISOString(),
});

const slug = z.string({ error: 'slug must be a string' }).max(64, 'slug must be at most 64 characters');
const color = z.string({ error: 'color must be a string' }).max(32, 'color must be at most 32 characters').nullable();
const createBody = z.object({ slug, color: color.optional() });
const updateBody = z.object({ slug: slug.optional(), color: color.optional() });
const project = z.object({ projectId: z.string().max(64) });
const oneParams = project.extend({ tagId: z.string().max(64) });
const slugParams = project.extend({ tagSlug: z.string().max(64) });

export function registerTagRoutes(api: Api, svc: Services) {
  for (const base of ['/api/v1/workspace/:projectId/tags', '/api/v1/projects/:projectId/tags'] as const) {
    api.get(base, { caller: 'any', summary: 'The project\'s tags', params: project, response: z.object({ tags: z.array(tagSchema) }) }, async ({ actor, params }) => ({
      body: { tags: (await svc.tags.list(actor, { id: params.projectId })).map(shape) },
    }));

    api.get(`${base}/slug/:tagSlug`, { caller: 'any', summary: 'One tag by slug', params: slugParams, response: oneTag }, async ({ actor, params }) => ({
      body: { tag: shape(await svc.tags.get(actor, { id: params.projectId }, { slug: params.tagSlug })) },
    }));

    api.get(`${base}/:tagId`, { caller: 'any', summary: 'One tag by id', params: oneParams, response: oneTag }, async ({ actor, params }) => ({
      body: { tag: shape(await svc.tags.get(actor, { id: params.projectId }, { id: params.tagId })) },
    }));

    api.post(base, { caller: 'any', summary: 'Create a tag {slug, color}', params: project, body: createBody, response: oneTag }, async ({ actor, params, body, origin }) => ({
      body: { tag: shape(await svc.tags.create(actor, { project: { id: params.projectId }, slug: body.slug, color: body.color, origin })) },
    }));

    api.patch(`${base}/:tagId`, { caller: 'any', summary: 'Change a tag\'s slug or colour', params: oneParams, body: updateBody, response: oneTag }, async ({ actor, params, body, origin }) => {
      if (body.slug === undefined && body.color === undefined) throw new AppError('VALIDATION', 'Give slug or color to change');
      return { body: { tag: shape(await svc.tags.update(actor, { project: { id: params.projectId }, id: params.tagId, slug: body.slug, color: body.color, origin })) } };
    });

    api.delete(`${base}/:tagId`, { caller: 'any', summary: 'Delete a tag (secrets no longer carry it)', params: oneParams, response: oneTag }, async ({ actor, params, origin }) => ({
      body: { tag: shape(await svc.tags.remove(actor, { project: { id: params.projectId }, id: params.tagId, origin })) },
    }));
  }
}
