// A secret's history: GET /api/v1/secret/:secretId/secret-versions (Infisical's path,
// newest first, paged) and POST …/secret-versions/:version/restore (this service's own:
// the chosen version becomes a NEW version; history is never rewritten).
import { z } from 'zod';
import type { SecretVersionView } from '../../domain/secrets.js';
import { parseJsonBody } from '../../http/body.js';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse, queryInt as int, queryObject } from '../input.js';
import { secretRaw } from '../shape.js';
import { boolish } from '../writeInput.js';

const pageQuery = z.object({ offset: int('offset', 0, 1_000_000_000).optional(), limit: int('limit', 1, 100).optional() });
const restoreParams = z.object({ version: int('version', 1, 2_147_483_647) });
const restoreBody = z.object({ overrideImmutable: boolish.optional() });

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

export function registerSecretVersionRoutes(router: Router, svc: Services) {
  router.get('/api/v1/secret/:secretId/secret-versions', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(pageQuery, queryObject(req.query));
    const versions = await svc.secrets.listVersions(actor, req.params.secretId!, q);
    return { body: { secretVersions: versions.map(versionShape) } };
  });

  router.post('/api/v1/secret/:secretId/secret-versions/:version/restore', async (req) => {
    const actor = await svc.auth.actor(req);
    const { version } = parse(restoreParams, { version: req.params.version });
    const b = parse(restoreBody, req.body.length ? parseJsonBody(req) : {});
    const secret = await svc.secrets.restoreVersion(actor, req.params.secretId!, version, { allowImmutableChange: b.overrideImmutable });
    return { body: { secret: secretRaw(secret) } };
  });
}
