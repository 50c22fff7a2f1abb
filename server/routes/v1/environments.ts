// A project's environments: POST /api/v1/projects/:projectId/environments,
// PATCH/DELETE …/environments/:envId (project admins).
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { environmentSchema, environmentShape, forceQuery, nameText } from './projects.js';

const createBody = z.object({ name: nameText('name'), slug: nameText('slug') });
const updateBody = z.object({ name: nameText('name').optional(), slug: nameText('slug').optional() });
const oneEnvironment = z.object({ environment: environmentSchema });

export function registerEnvironmentRoutes(api: Api, svc: Services) {
  api.post(
    '/api/v1/projects/:projectId/environments',
    { caller: 'any', summary: 'Add an environment to a project', body: createBody, response: oneEnvironment },
    async ({ actor, params, body, origin }) => ({
      body: { environment: environmentShape(await svc.environments.create(actor, { id: params.projectId }, body, origin)) },
    }),
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
