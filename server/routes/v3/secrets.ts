// GET /api/v3/secrets/raw and /api/v3/secrets/raw/:secretName — the operator's reads.
import { z } from 'zod';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse, projectRef, queryBool, queryObject } from '../input.js';
import { secretRaw } from '../shape.js';

const scope = {
  workspaceSlug: z.string().max(64).optional(),
  workspaceId: z.string().max(64).optional(),
  environment: z.string({ error: 'environment is required' }).min(1).max(64),
  secretPath: z.string().max(1024).optional(),
  expandSecretReferences: queryBool.optional(),
  include_imports: queryBool.optional(),
  viewSecretValue: queryBool.optional(),
};

const listQuery = z.object({ ...scope, recursive: queryBool.optional() });
const getQuery = z.object({
  ...scope,
  version: z.coerce.number().int().min(1).max(2_147_483_647).optional(),
  type: z.enum(['shared', 'personal']).optional(),
});

export function registerSecretReadRoutes(router: Router, svc: Services) {
  router.get('/api/v3/secrets/raw', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(listQuery, queryObject(req.query));
    const secrets = await svc.secrets.list(actor, {
      project: projectRef(q),
      environment: q.environment,
      secretPath: q.secretPath,
      recursive: q.recursive,
      expandSecretReferences: q.expandSecretReferences,
      viewSecretValue: q.viewSecretValue,
    });
    // Imports are accepted but this service has none to include.
    return { body: { secrets: secrets.map(secretRaw), imports: [] } };
  });

  router.get('/api/v3/secrets/raw/:secretName', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(getQuery, queryObject(req.query));
    const secret = await svc.secrets.get(actor, {
      project: projectRef(q),
      environment: q.environment,
      secretPath: q.secretPath,
      secretName: req.params.secretName!,
      version: q.version,
      type: q.type,
      expandSecretReferences: q.expandSecretReferences,
      viewSecretValue: q.viewSecretValue,
    });
    return { body: { secret: secretRaw(secret) } };
  });
}
