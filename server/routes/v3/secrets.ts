// Secrets, v3: GET /api/v3/secrets/raw[/:secretName] (project by workspaceSlug or
// workspaceId: the operator's read), POST|PATCH|DELETE /api/v3/secrets/raw/:secretName
// and POST /api/v3/secrets/batch/raw (project by workspaceId or projectSlug); and
// GET /api/v3/secrets/raw/id/:secretId, one secret by id (Terraform's `import`; Infisical's
// backend/src/server/routes/v3/secret-router.ts answers {secret} and takes no query).
import { z } from 'zod';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { projectRef, v3ProjectRef } from '../input.js';
import { registerSecretRoutes } from '../secrets.js';
import { oneSecret, secretRaw } from '../shape.js';

export function registerV3SecretRoutes(api: Api, svc: Services) {
  registerSecretRoutes(api, svc, { list: '/api/v3/secrets/raw', one: '/api/v3/secrets/raw/:secretName', batch: '/api/v3/secrets/batch/raw' }, { read: projectRef, write: v3ProjectRef });

  api.get(
    '/api/v3/secrets/raw/id/:secretId',
    {
      caller: 'any',
      summary: 'One secret by id, with its value for a caller who may read values there (an id the caller may not see answers as an unknown one)',
      params: z.object({ secretId: z.string().max(256) }),
      response: oneSecret,
    },
    async ({ actor, params }) => ({ body: { secret: secretRaw(await svc.secrets.getById(actor, { id: params.secretId })) } }),
  );
}
