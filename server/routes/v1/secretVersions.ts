// A secret's history: GET /api/v1/secret/:secretId/secret-versions (Infisical's path,
// newest first, paged) and POST …/secret-versions/:version/restore (this service's own:
// the chosen version becomes a NEW version; history is never rewritten).
import { z } from 'zod';
import type { SecretVersionView } from '../../domain/secretVersions.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { boolish, queryInt as int } from '../input.js';
import { isoString, oneSecret, secretRaw } from '../shape.js';

const pageQuery = z.object({ offset: int('offset', 0, 1_000_000_000).optional(), limit: int('limit', 1, 100).optional() });
const restoreParams = z.object({ secretId: z.string(), version: int('version', 1, 2_147_483_647) });
const restoreBody = z.object({ overrideImmutable: boolish.optional() });

const versionSchema = z.object({
  id: z.string(),
  _id: z.string(),
  secretId: z.string(),
  secret: z.string(),
  workspace: z.string(),
  environment: z.string(),
  secretPath: z.string(),
  version: z.number().int(),
  type: z.literal('shared'),
  secretKey: z.string(),
  secretValue: z.string(),
  secretComment: z.string(),
  actor: z.object({ type: z.string(), id: z.string().nullable() }),
  createdAt: isoString,
});

function versionShape(v: SecretVersionView) {
  return {
    id: v.id,
    _id: v.id,
    secretId: v.secretId,
    secret: v.secretId,
    workspace: v.projectId,
    environment: v.environment,
    secretPath: v.path,
    version: v.version,
    type: 'shared' as const,
    secretKey: v.key,
    secretValue: v.value,
    secretComment: v.comment,
    actor: { type: v.actorType, id: v.actorId },
    createdAt: v.createdAt.toISOString(),
  };
}

export function registerSecretVersionRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/secret/:secretId/secret-versions',
    { caller: 'any', summary: "A secret's versions, newest first, paged", query: pageQuery, response: z.object({ secretVersions: z.array(versionSchema) }) },
    async ({ actor, params, query }) => ({
      body: { secretVersions: (await svc.secretVersions.list(actor, params.secretId, query)).map(versionShape) },
    }),
  );

  api.post(
    '/api/v1/secret/:secretId/secret-versions/:version/restore',
    { caller: 'any', summary: 'Restore a version as a new version (history is never rewritten)', params: restoreParams, body: restoreBody, response: oneSecret },
    async ({ actor, params, body, origin }) => {
      const secret = await svc.secretVersions.restore(actor, params.secretId, params.version, { allowImmutableChange: body.overrideImmutable, origin });
      return { body: { secret: secretRaw(secret) } };
    },
  );
}
