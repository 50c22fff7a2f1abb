// Secrets, v4: the v3 routes at /api/v4/secrets[/:secretName] and /api/v4/secrets/batch,
// with the project named by projectId (as the newer CLI sends it). A read that leaves
// includeImports / expandSecretReferences out gets both (see ReadDefaults).
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { projectIdRef } from '../input.js';
import { registerSecretRoutes, type ReadDefaults } from '../secrets.js';

const V4_DEFAULTS: ReadDefaults = { includeImports: true, expandSecretReferences: true };

export function registerV4SecretRoutes(api: Api, svc: Services) {
  registerSecretRoutes(api, svc, { list: '/api/v4/secrets', one: '/api/v4/secrets/:secretName', batch: '/api/v4/secrets/batch' }, { read: projectIdRef, write: projectIdRef }, V4_DEFAULTS);
}
