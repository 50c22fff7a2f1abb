// Secrets, v3: GET /api/v3/secrets/raw[/:secretName] (project by workspaceSlug or
// workspaceId: the operator's read), POST|PATCH|DELETE /api/v3/secrets/raw/:secretName
// and POST /api/v3/secrets/batch/raw (project by workspaceId or projectSlug).
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { projectRef, v3ProjectRef } from '../input.js';
import { registerSecretRoutes } from '../secrets.js';

export function registerV3SecretRoutes(api: Api, svc: Services) {
  registerSecretRoutes(api, svc, { list: '/api/v3/secrets/raw', one: '/api/v3/secrets/raw/:secretName', batch: '/api/v3/secrets/batch/raw' }, { read: projectRef, write: v3ProjectRef });
}
