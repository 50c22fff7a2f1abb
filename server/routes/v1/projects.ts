// Projects, for the admin UI and Infisical's clients: POST/GET /api/v1/projects,
// GET/PATCH/DELETE /api/v1/projects/:projectId, and GET /api/v1/projects/slug/:slug
// (clients that know a slug ask for the ids there). Infisical's older "workspace" names
// answer from the same handlers: GET /api/v1/workspace (the MCP server's list-projects,
// `?type=all`), GET /api/v1/workspace/:projectId (Terraform's read, the CLI), and
// GET /api/v2/workspace/:slug (the operator's projectSlug, Terraform), and POST /api/v2/workspace
// (project create: the SDK 4.x behind the MCP server, Terraform). A DELETE of what holds secrets needs
// ?force=true, and ?overrideImmutable=true as well when any of them must never change.
import { z } from 'zod';
import type { EnvironmentRow } from '../../../storage/projects.js';
import type { ProjectView } from '../../domain/projects.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { boolish, boundedName, queryBool } from '../input.js';
import { isoString } from '../shape.js';

export const nameText = (name: string) => z.string({ error: `${name} must be a string` }).max(256);

const createBody = z.object({
  projectName: nameText('projectName'),
  slug: nameText('slug').optional(),
  // The SDK always sends a type; every project here is a secret manager (applied), other
  // types are refused. The default template is what a new project gets (dev, staging, prod).
  type: z.literal('secret-manager', { error: 'type must be "secret-manager": other project types are not supported' }).optional(),
  template: z.literal('default', { error: 'template must be "default": project templates are not supported' }).optional(),
});
const updateBody = z.object({ name: nameText('name').optional(), slug: nameText('slug').optional() });
/**
 * Infisical's POST /api/v2/workspace (Infisical/infisical backend/src/server/routes/v2/
 * deprecated-project-router.ts): the body of @infisical/sdk 4.x projects().create
 * {projectName, projectDescription?, slug?, template?, type, kmsKeyId?} and of Terraform's
 * infisical_project (terraform-provider-infisical internal/client/model.go
 * CreateProjectRequest {projectName, projectDescription?, slug, organizationSlug, template?,
 * kmsKeyId?, shouldCreateDefaultEnvs, hasDeleteProtection}). What asks for nothing is
 * accepted: an empty slug (derived from the name), an empty description or KMS key, any
 * organizationSlug (there is one organization), delete protection off. What asks for
 * something absent here is a 422 naming it; shouldCreateDefaultEnvs is applied.
 */
const emptyOr = (field: string, what: string) =>
  z
    .string({ error: `${field} must be a string` })
    .max(1024)
    .nullable()
    .optional()
    .refine((v) => v == null || v.trim() === '', `${field}: ${what} are not supported here (send it empty or leave it out)`);
const v2CreateBody = z.object({
  ...createBody.shape,
  slug: nameText('slug').nullable().optional(),
  projectDescription: emptyOr('projectDescription', 'project descriptions'),
  kmsKeyId: emptyOr('kmsKeyId', 'external KMS keys'),
  organizationSlug: z.string({ error: 'organizationSlug must be a string' }).max(256).optional(),
  shouldCreateDefaultEnvs: boolish.optional(),
  hasDeleteProtection: boolish
    .optional()
    .refine((v) => v !== true, 'hasDeleteProtection: delete protection is not supported here (a project holding secrets is deleted only with force=true)'),
});

export const forceQuery = z.object({ force: queryBool.optional(), overrideImmutable: queryBool.optional() });
// The limits of every other project ref: the slug is echoed in the 404 message.
const slugParams = z.object({ slug: boundedName('slug', 64) });

export const environmentSchema = z.object({ id: z.string(), name: z.string(), slug: z.string(), position: z.number().int() });
const projectFields = { id: z.string(), _id: z.string(), name: z.string(), slug: z.string(), orgId: z.string(), version: z.literal(3), createdAt: isoString, updatedAt: isoString };
const projectSchema = z.object({ ...projectFields, environments: z.array(environmentSchema) });
const oneProject = z.object({ project: projectSchema });
/** Unwrapped, with the ids clients need. */
const projectBySlug = z.object({ ...projectFields, environments: z.array(environmentSchema.omit({ position: true })) });

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

/** Infisical's project types: every project here is a secret manager, so any other type lists none. */
const workspaceListQuery = z.object({ type: z.string().max(64).optional() });
const listsSecretManagers = (type: string | undefined) => type === undefined || type === 'all' || type === 'secret-manager';

/** GET /api/v1/projects/slug/:slug and GET /api/v2/workspace/:slug: the project itself, unwrapped. */
function projectUnwrapped(project: ProjectView) {
  return {
    id: project.id,
    _id: project.id,
    name: project.name,
    slug: project.slug,
    orgId: project.orgId,
    version: 3 as const,
    environments: project.environments.map((e) => ({ id: e.id, name: e.name, slug: e.slug })),
    createdAt: project.createdAt.toISOString(),
    updatedAt: project.updatedAt.toISOString(),
  };
}

export function registerProjectRoutes(api: Api, svc: Services) {
  api.post(
    '/api/v1/projects',
    { caller: 'any', summary: 'Create a project (slug derived from the name when absent; environments dev, staging, prod)', body: createBody, response: oneProject },
    async ({ actor, body, origin }) => ({
      body: { project: projectShape(await svc.projects.create(actor, { name: body.projectName, slug: body.slug, origin })) },
    }),
  );

  api.post(
    '/api/v2/workspace',
    {
      caller: 'any',
      summary: "Create a project, Infisical's v2 body and {project} answer (slug derived from the name when absent or empty; shouldCreateDefaultEnvs false: no environments)",
      body: v2CreateBody,
      response: oneProject,
    },
    async ({ actor, body, origin }) => {
      const project = await svc.projects.create(actor, { name: body.projectName, slug: body.slug || undefined, defaultEnvironments: body.shouldCreateDefaultEnvs, origin });
      return { body: { project: projectShape(project) } };
    },
  );

  api.get(
    '/api/v1/projects',
    { caller: 'any', summary: "The caller's projects (every project for the superadmin)", response: z.object({ projects: z.array(projectSchema) }) },
    async ({ actor }) => ({ body: { projects: (await svc.projects.list(actor)).map(projectShape) } }),
  );

  api.get(
    '/api/v1/workspace',
    {
      caller: 'any',
      summary: "The caller's projects under Infisical's older name (`type`: `all` or `secret-manager` lists them; another project type lists none)",
      query: workspaceListQuery,
      response: z.object({ workspaces: z.array(projectSchema) }),
    },
    async ({ actor, query }) => ({ body: { workspaces: listsSecretManagers(query.type) ? (await svc.projects.list(actor)).map(projectShape) : [] } }),
  );

  api.get(
    '/api/v1/projects/:projectId',
    { caller: 'any', summary: 'One project with its environments', response: oneProject },
    async ({ actor, params }) => ({ body: { project: projectShape(await svc.projects.get(actor, { id: params.projectId })) } }),
  );

  api.get(
    '/api/v1/workspace/:projectId',
    { caller: 'any', summary: 'One project with its environments, under Infisical\'s older name (`{workspace}`)', response: z.object({ workspace: projectSchema }) },
    async ({ actor, params }) => ({ body: { workspace: projectShape(await svc.projects.get(actor, { id: params.projectId })) } }),
  );

  api.patch(
    '/api/v1/projects/:projectId',
    { caller: 'any', summary: "Rename a project or change its slug (project admins)", body: updateBody, response: oneProject },
    async ({ actor, params, body, origin }) => ({
      body: { project: projectShape(await svc.projects.update(actor, { id: params.projectId }, body, origin)) },
    }),
  );

  api.delete(
    '/api/v1/projects/:projectId',
    { caller: 'any', summary: 'Delete a project and everything in it (project admins; force=true when it holds secrets)', query: forceQuery, response: oneProject },
    async ({ actor, params, query, origin }) => ({
      body: { project: projectShape(await svc.projects.remove(actor, { id: params.projectId }, query, origin)) },
    }),
  );

  api.get(
    '/api/v1/projects/slug/:slug',
    { caller: 'any', summary: 'A project by slug, with the ids clients need (Infisical shape, unwrapped)', params: slugParams, response: projectBySlug },
    async ({ actor, params }) => ({ body: projectUnwrapped(await svc.projects.get(actor, { slug: params.slug })) }),
  );

  api.get(
    '/api/v2/workspace/:slug',
    { caller: 'any', summary: 'A project by slug, unwrapped (the operator\'s projectSlug, Terraform)', params: slugParams, response: projectBySlug },
    async ({ actor, params }) => ({ body: projectUnwrapped(await svc.projects.get(actor, { slug: params.slug })) }),
  );
}
