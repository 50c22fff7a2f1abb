// A project's environments: POST /api/v1/projects/:projectId/environments,
// PATCH/DELETE …/environments/:envId (project admins). POST
// /api/v1/workspace/:projectId/environments is Infisical's path and envelope for the same
// create, where its SDKs (5.x) call it.
import { z } from 'zod';
import { AppError } from '../../errors.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { environmentSchema, environmentShape, forceQuery, nameText } from './projects.js';

const createBody = z.object({ name: nameText('name'), slug: nameText('slug') });
const updateBody = z.object({ name: nameText('name').optional(), slug: nameText('slug').optional() });
const oneEnvironment = z.object({ environment: environmentSchema });
const workspaceCreateBody = createBody.extend({
  /** The SDK repeats the path's project id in the body; it must agree. */
  projectId: z.string().optional(),
  position: z.never({ error: 'position is not supported: a new environment is added last' }).optional(),
});
const workspaceCreated = z.object({
  message: z.string(),
  workspace: z.string(),
  environment: environmentSchema.extend({ projectId: z.string() }),
});

export function registerEnvironmentRoutes(api: Api, svc: Services) {
  api.post(
    '/api/v1/projects/:projectId/environments',
    { caller: 'any', summary: 'Add an environment to a project', body: createBody, response: oneEnvironment },
    async ({ actor, params, body, origin }) => ({
      body: { environment: environmentShape(await svc.environments.create(actor, { id: params.projectId }, body, origin)) },
    }),
  );

  api.post(
    '/api/v1/workspace/:projectId/environments',
    { caller: 'any', summary: "Add an environment to a project (Infisical's path and envelope)", body: workspaceCreateBody, response: workspaceCreated },
    async ({ actor, params, body, origin }) => {
      if (body.projectId !== undefined && body.projectId !== params.projectId) {
        throw new AppError('VALIDATION', 'projectId in the body does not match the path');
      }
      const e = await svc.environments.create(actor, { id: params.projectId }, { name: body.name, slug: body.slug }, origin);
      return {
        body: { message: 'Successfully created new environment', workspace: e.projectId, environment: { ...environmentShape(e), projectId: e.projectId } },
      };
    },
  );

  api.patch(
    '/api/v1/projects/:projectId/environments/:envId',
    { caller: 'any', summary: "Rename an environment or change its slug", body: updateBody, response: oneEnvironment },
    async ({ actor, params, body, origin }) => ({
      body: { environment: environmentShape(await svc.environments.update(actor, { id: params.projectId }, params.envId, body, origin)) },
    }),
  );

  api.delete(
    '/api/v1/projects/:projectId/environments/:envId',
    { caller: 'any', summary: 'Delete an environment and what it holds (force=true when it holds secrets)', query: forceQuery, response: oneEnvironment },
    async ({ actor, params, query, origin }) => ({
      body: { environment: environmentShape(await svc.environments.remove(actor, { id: params.projectId }, params.envId, query, origin)) },
    }),
  );
}
