// Custom project roles (project admins), at Infisical's paths and envelopes:
// GET/POST /api/v1/projects/:projectId/roles, GET …/roles/slug/:roleSlug,
// PATCH/DELETE …/roles/:roleId. A role is assigned through the memberships routes
// (`role`: its slug).
import { z } from 'zod';
import type { ProjectRoleRow } from '../../../storage/projectRoles.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { boundedName } from '../input.js';
import { isoString } from '../shape.js';

const ruleSchema = z.object({
  subject: z.literal('secrets'),
  action: z.array(z.string()),
  conditions: z.object({ environment: z.string().optional(), secretPath: z.object({ $glob: z.string() }).optional() }).optional(),
  inverted: z.boolean().optional(),
});
const roleFields = {
  id: z.string(),
  projectId: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  createdAt: isoString,
  updatedAt: isoString,
};
const roleSchema = z.object({ ...roleFields, version: z.number().int(), permissions: z.array(ruleSchema) });
const oneRole = z.object({ role: roleSchema });

const roleJson = (r: ProjectRoleRow) => ({
  id: r.id,
  projectId: r.projectId,
  slug: r.slug,
  name: r.name,
  description: r.description,
  version: r.version,
  permissions: r.permissions as z.infer<typeof ruleSchema>[],
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

// The rules' own checks (validateRules) name the field that is wrong; here only the envelope.
const text = (name: string, max: number) => z.string({ error: `${name} must be a string` }).max(max, `${name} must be at most ${max} characters`);
const createBody = z.strictObject({
  slug: text('slug', 64),
  name: text('name', 64),
  description: text('description', 1000).nullish(),
  permissions: z.array(z.unknown(), { error: 'permissions must be a list' }),
});
const updateBody = z.strictObject({
  slug: text('slug', 64).optional(),
  name: text('name', 64).optional(),
  description: text('description', 1000).nullish(),
  permissions: z.array(z.unknown(), { error: 'permissions must be a list' }).optional(),
});

export function registerRoleRoutes(api: Api, svc: Services) {
  const roles = svc.roles;
  const base = '/api/v1/projects/:projectId/roles';

  api.get(
    base,
    {
      caller: 'any',
      summary: "The project's custom roles, without their rules (project admins; Infisical's list)",
      response: z.object({ roles: z.array(z.object(roleFields)) }),
    },
    async ({ actor, params }) => ({
      body: {
        roles: (await roles.list(actor, { id: params.projectId })).map((r) => {
          const { permissions: _p, version: _v, ...rest } = roleJson(r);
          return rest;
        }),
      },
    }),
  );

  api.get(
    `${base}/slug/:roleSlug`,
    { caller: 'any', summary: 'One custom role with its rules, by slug (project admins)', params: z.object({ projectId: z.string(), roleSlug: boundedName('roleSlug', 64) }), response: oneRole },
    async ({ actor, params }) => ({ body: { role: roleJson(await roles.bySlug(actor, { id: params.projectId }, params.roleSlug)) } }),
  );

  api.post(
    base,
    { caller: 'any', summary: 'Create a custom role: rules over secrets by action, environment and path glob (deny wins)', body: createBody, response: oneRole },
    async ({ actor, params, body, origin }) => ({ body: { role: roleJson(await roles.create(actor, { id: params.projectId }, body, origin)) } }),
  );

  api.patch(
    `${base}/:roleId`,
    { caller: 'any', summary: "Change a custom role's slug, name, description or rules (its members' next request sees them)", body: updateBody, response: oneRole },
    async ({ actor, params, body, origin }) => ({ body: { role: roleJson(await roles.update(actor, { id: params.projectId }, params.roleId, body, origin)) } }),
  );

  api.delete(
    `${base}/:roleId`,
    { caller: 'any', summary: 'Delete a custom role no member holds', response: oneRole },
    async ({ actor, params, origin }) => ({ body: { role: roleJson(await roles.remove(actor, { id: params.projectId }, params.roleId, origin)) } }),
  );
}
