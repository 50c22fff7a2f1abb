// Secret imports, at Infisical's paths and shapes: POST /api/v1/secret-imports,
// GET /api/v1/secret-imports, PATCH|DELETE /api/v1/secret-imports/:secretImportId. The
// folder is named by workspaceId (or projectId), environment and path; the import by
// {environment, path} of the same project.
import { z } from 'zod';
import type { SecretImportView } from '../../domain/secretImports.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { projectIdRef, ref } from '../input.js';
import { isoString } from '../shape.js';

const scope = {
  workspaceId: ref,
  projectId: ref,
  environment: z.string({ error: 'environment is required' }).min(1, 'environment is required').max(64),
  path: z.string({ error: 'path must be a string' }).max(1024).optional(),
};

const sourceEnvironment = z.string({ error: 'import.environment must be a string' }).min(1, 'import.environment is required').max(64);
const sourcePath = z.string({ error: 'import.path must be a string' }).min(1, 'import.path is required').max(1024);

const createBody = z.object({
  ...scope,
  import: z.strictObject({ environment: sourceEnvironment, path: sourcePath }, { error: (iss) => (iss.code === 'invalid_type' ? 'import must be an object {environment, path}' : undefined) }),
  // Replicated imports (copies kept in sync) do not exist here: false is what every import is.
  isReplication: z.literal(false, { error: 'isReplication: replicated imports are not supported' }).optional(),
});
const updateBody = z.object({
  ...scope,
  import: z.strictObject(
    {
      environment: sourceEnvironment.optional(),
      path: sourcePath.optional(),
      position: z.number({ error: 'import.position must be a number' }).int('import.position must be an integer').min(1, 'import.position must be at least 1').max(1000).optional(),
    },
    { error: (iss) => (iss.code === 'invalid_type' ? 'import must be an object {environment?, path?, position?}' : undefined) },
  ),
});
const listQuery = z.object(scope);
const deleteInput = z.object(scope);
const idParam = z.object({ secretImportId: z.string().max(64) });

const importSchema = z.object({
  id: z.string(),
  folderId: z.string(),
  importPath: z.string(),
  importEnv: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
  position: z.number().int(),
  isReplication: z.literal(false),
  createdAt: isoString,
  updatedAt: isoString,
});
const oneImport = z.object({ message: z.string(), secretImport: importSchema });

const shape = (v: SecretImportView): z.infer<typeof importSchema> => ({
  id: v.id,
  folderId: v.folderId,
  importPath: v.importPath,
  importEnv: v.importEnv,
  position: v.position,
  isReplication: false,
  createdAt: v.createdAt.toISOString(),
  updatedAt: v.updatedAt.toISOString(),
});

const where = (b: z.output<typeof listQuery>) => ({ project: projectIdRef(b), environment: b.environment, path: b.path });

export function registerSecretImportRoutes(api: Api, svc: Services) {
  const base = '/api/v1/secret-imports';

  api.post(base, { caller: 'any', summary: 'Import another folder of the project (environment and path) into a folder', body: createBody, response: oneImport }, async ({ actor, body, origin }) => {
    const created = await svc.secretImports.create(actor, { ...where(body), import: body.import, origin });
    return { body: { message: 'Successfully created secret import', secretImport: shape(created) } };
  });

  api.get(
    base,
    { caller: 'any', summary: 'The imports of a folder, in order', query: listQuery, response: z.object({ message: z.string(), secretImports: z.array(importSchema) }) },
    async ({ actor, query }) => ({
      body: { message: 'Successfully fetched secret imports', secretImports: (await svc.secretImports.list(actor, where(query))).map(shape) },
    }),
  );

  api.patch(
    `${base}/:secretImportId`,
    { caller: 'any', summary: 'Move an import (position, 1 = first) or point it at another folder', params: idParam, body: updateBody, response: oneImport },
    async ({ actor, params, body, origin }) => {
      const updated = await svc.secretImports.update(actor, { ...where(body), id: params.secretImportId, import: body.import, origin });
      return { body: { message: 'Successfully updated secret import', secretImport: shape(updated) } };
    },
  );

  api.delete(
    `${base}/:secretImportId`,
    { caller: 'any', summary: 'Delete an import (the source folder is untouched)', params: idParam, body: deleteInput, bodyFrom: 'body+query', response: oneImport },
    async ({ actor, params, body, origin }) => {
      const removed = await svc.secretImports.remove(actor, { ...where(body), id: params.secretImportId, origin });
      return { body: { message: 'Successfully deleted secret import', secretImport: shape(removed) } };
    },
  );
}
