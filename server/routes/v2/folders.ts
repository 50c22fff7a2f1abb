// Folders: POST /api/v2/folders, GET /api/v2/folders, PATCH /api/v2/folders/:folderId
// (a rename; as Infisical, `path` is the folder's parent and a name is taken for an id),
// DELETE /api/v2/folders/:folderIdOrName. The same routes answer under /api/v1/folders,
// where Infisical's SDKs (5.x) call them.
import { z } from 'zod';
import { AppError } from '../../errors.js';
import type { FolderView } from '../../domain/folders.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { boolish, projectIdRef, ref } from '../input.js';
import { isoString } from '../shape.js';

const scope = {
  projectId: ref,
  workspaceId: ref,
  environment: z.string({ error: 'environment is required' }).min(1).max(64),
  path: z.string().max(1024).optional(),
  /** Infisical's older name for `path`. */
  directory: z.string().max(1024).optional(),
};

const name = z.string({ error: 'name is required' }).min(1).max(64);
/**
 * Infisical's folder description: the Python SDK and Terraform send one (null or "" when
 * unset). Folders here keep no description, so only an empty one is accepted.
 */
const description = z
  .string({ error: 'description must be a string' })
  .max(0, 'folder descriptions are not supported: send an empty description or leave it out')
  .nullish();
const createBody = z.object({ ...scope, name, description });
const renameBody = z.object({ ...scope, name, description });
const listQuery = z.object({
  ...scope,
  recursive: boolish.optional(),
  // A filter the Python SDK can send; refused rather than ignored.
  lastSecretModified: z.never({ error: 'lastSecretModified is not supported: list without it' }).optional(),
});
const deleteInput = z.object({
  ...scope,
  force: boolish.optional(),
  /** The Python SDK's name for `force`. */
  forceDelete: boolish.optional(),
  /** The CLI repeats the folder's name from the path (Infisical/cli packages/api/model.go DeleteFolderV1Request). */
  folderName: z.string({ error: 'folderName must be a string' }).max(255).optional(),
  overrideImmutable: boolish.optional(),
});

const listedSchema = z.object({
  id: z.string(),
  name: z.string(),
  path: z.string(),
  parentId: z.string().nullable(),
  envId: z.string(),
  createdAt: isoString,
  updatedAt: isoString,
});
const oneFolder = z.object({ folder: listedSchema });
const folderById = z.object({ folder: listedSchema.extend({ environment: z.object({ envId: z.string(), envSlug: z.string() }), projectId: z.string() }) });

type Scope = Omit<z.output<typeof createBody>, 'name'>;
/** Where a folder request points: the project, environment and parent path. */
/** `path` and the older `directory` name the same thing: both given and different is refused, not resolved silently. */
function folderPath(b: Scope): string | undefined {
  if (b.path !== undefined && b.directory !== undefined && b.path !== b.directory) {
    throw new AppError('VALIDATION', 'path and directory name different folders');
  }
  return b.path ?? b.directory;
}
const where = (b: Scope) => ({ project: projectIdRef(b), environment: b.environment, path: folderPath(b) });

const folderShape = (f: Omit<FolderView, 'environmentId'> & { environmentId: string }) => ({
  id: f.id,
  name: f.name,
  path: f.path,
  parentId: f.parentId,
  envId: f.environmentId,
  createdAt: f.createdAt.toISOString(),
  updatedAt: f.updatedAt.toISOString(),
});
const listedShape = folderShape;

/** `force` and the Python SDK's `forceDelete` say the same: both given and different is refused. */
function forced(b: { force?: boolean; forceDelete?: boolean }): boolean | undefined {
  if (b.force !== undefined && b.forceDelete !== undefined && b.force !== b.forceDelete) throw new AppError('VALIDATION', 'force and forceDelete disagree');
  return b.force ?? b.forceDelete;
}

export function registerFolderRoutes(api: Api, svc: Services) {
  for (const version of ['v1', 'v2'] as const) registerAt(api, svc, `/api/${version}/folders`);
}

function registerAt(api: Api, svc: Services, base: string) {
  api.post(
    base,
    { caller: 'any', summary: 'Create a folder under `path`', body: createBody, response: oneFolder },
    async ({ actor, body, origin }) => {
      const { path, ...at } = where(body);
      return { body: { folder: folderShape(await svc.folders.create(actor, { ...at, parentPath: path, name: body.name, origin })) } };
    },
  );

  api.patch(
    `${base}/:folderId`,
    { caller: 'any', summary: 'Rename a folder (its sub-folders move along)', body: renameBody, response: oneFolder },
    async ({ actor, params, body, origin }) => ({
      body: { folder: folderShape(await svc.folders.rename(actor, { ...where(body), folder: params.folderId, name: body.name, origin })) },
    }),
  );

  api.get(
    `${base}/:folderId`,
    { caller: 'any', summary: 'One folder by id (with its environment and project)', response: folderById },
    async ({ actor, params }) => {
      const f = await svc.folders.get(actor, params.folderId);
      return { body: { folder: { ...folderShape(f), environment: { envId: f.environmentId, envSlug: f.environmentSlug }, projectId: f.projectId } } };
    },
  );

  api.get(
    base,
    { caller: 'any', summary: 'The sub-folders of `path` (with `recursive=true`, every folder below it)', query: listQuery, response: z.object({ folders: z.array(listedSchema) }) },
    async ({ actor, query }) => ({
      body: { folders: (await svc.folders.list(actor, { ...where(query), recursive: query.recursive })).map(listedShape) },
    }),
  );

  api.delete(
    `${base}/:folderIdOrName`,
    { caller: 'any', summary: 'Delete a folder and what it holds (force=true when it holds secrets)', body: deleteInput, bodyFrom: 'body+query', response: z.object({ folder: listedSchema }) },
    async ({ actor, params, body, origin }) => {
      if (body.folderName !== undefined && body.folderName !== params.folderIdOrName) {
        throw new AppError('VALIDATION', 'folderName must name the folder of the path');
      }
      const folder = await svc.folders.remove(actor, {
        ...where(body),
        folder: params.folderIdOrName,
        force: forced(body),
        overrideImmutable: body.overrideImmutable,
        origin,
      });
      return { body: { folder: listedShape(folder) } };
    },
  );
}
