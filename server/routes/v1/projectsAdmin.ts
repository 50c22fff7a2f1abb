// Projects and their environments, for the admin UI and Infisical's clients:
// POST/GET /api/v1/projects, GET/PATCH/DELETE /api/v1/projects/:projectId,
// POST /api/v1/projects/:projectId/environments, PATCH/DELETE …/environments/:envId.
// A DELETE of what holds secrets needs ?force=true, and ?overrideImmutable=true as well
// when any of them is marked as never changing.
import { z } from 'zod';
import type { ProjectView } from '../../domain/projects.js';
import { parseJsonBody } from '../../http/body.js';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import type { EnvironmentRow } from '../../../storage/projects.js';
import { parse, queryBool, queryObject } from '../input.js';

const text = (name: string) => z.string({ error: `${name} must be a string` }).max(256);

const createBody = z.object({ projectName: text('projectName'), slug: text('slug').optional() });
const updateBody = z.object({ name: text('name').optional(), slug: text('slug').optional() });
const envCreateBody = z.object({ name: text('name'), slug: text('slug') });
const envUpdateBody = z.object({ name: text('name').optional(), slug: text('slug').optional() });
const forceQuery = z.object({ force: queryBool.optional(), overrideImmutable: queryBool.optional() });

export const environmentShape = (e: EnvironmentRow) => ({ id: e.id, name: e.name, slug: e.slug, position: e.position });

export function projectShape(p: ProjectView) {
  return {
    id: p.id,
    _id: p.id,
    name: p.name,
    slug: p.slug,
    orgId: p.orgId,
    version: 3,
    environments: p.environments.map(environmentShape),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

export function registerProjectAdminRoutes(router: Router, svc: Services) {
  router.post('/api/v1/projects', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(createBody, parseJsonBody(req));
    const project = await svc.projects.create(actor, { name: b.projectName, slug: b.slug });
    return { body: { project: projectShape(project) } };
  });

  router.get('/api/v1/projects', async (req) => {
    const actor = await svc.auth.actor(req);
    return { body: { projects: (await svc.projects.list(actor)).map(projectShape) } };
  });

  router.get('/api/v1/projects/:projectId', async (req) => {
    const actor = await svc.auth.actor(req);
    const project = await svc.projects.get(actor, { id: req.params.projectId! });
    return { body: { project: projectShape(project) } };
  });

  router.patch('/api/v1/projects/:projectId', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(updateBody, parseJsonBody(req));
    const project = await svc.projects.update(actor, { id: req.params.projectId! }, b);
    return { body: { project: projectShape(project) } };
  });

  router.delete('/api/v1/projects/:projectId', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(forceQuery, queryObject(req.query));
    const project = await svc.projects.remove(actor, { id: req.params.projectId! }, q);
    return { body: { project: projectShape(project) } };
  });

  router.post('/api/v1/projects/:projectId/environments', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(envCreateBody, parseJsonBody(req));
    const env = await svc.projects.createEnvironment(actor, { id: req.params.projectId! }, b);
    return { body: { environment: environmentShape(env) } };
  });

  router.patch('/api/v1/projects/:projectId/environments/:envId', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(envUpdateBody, parseJsonBody(req));
    const env = await svc.projects.updateEnvironment(actor, { id: req.params.projectId! }, req.params.envId!, b);
    return { body: { environment: environmentShape(env) } };
  });

  router.delete('/api/v1/projects/:projectId/environments/:envId', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(forceQuery, queryObject(req.query));
    const env = await svc.projects.removeEnvironment(actor, { id: req.params.projectId! }, req.params.envId!, q);
    return { body: { environment: environmentShape(env) } };
  });
}
