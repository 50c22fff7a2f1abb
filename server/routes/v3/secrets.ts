// The operator's reads: GET /api/v3/secrets/raw and /api/v3/secrets/raw/:secretName
// (project by workspaceSlug or workspaceId), and their v4 mirrors GET /api/v4/secrets
// and /api/v4/secrets/:secretName (project by projectId, as the newer CLI sends it).
import { z } from 'zod';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import type { ProjectRef } from '../../domain/access.js';
import { boundedName, parse, projectRef, queryBool, queryInt, queryObject } from '../input.js';
import { projectIdRef, ref } from '../writeInput.js';
import { secretRaw } from '../shape.js';

const scope = {
  // `ref` refuses control characters (a NUL slug would otherwise reach the database).
  workspaceSlug: ref,
  workspaceId: ref,
  projectId: ref,
  environment: boundedName('environment', 64),
  secretPath: z.string().max(1024).optional(),
  expandSecretReferences: queryBool.optional(),
  include_imports: queryBool.optional(),
  viewSecretValue: queryBool.optional(),
};

const listQuery = z.object({ ...scope, recursive: queryBool.optional() });
const getQuery = z.object({
  ...scope,
  // Decimal digits only: z.coerce would also take 0x1, 1e0 and ' 1'.
  version: queryInt('version', 1, 2_147_483_647).optional(),
  type: z.enum(['shared', 'personal']).optional(),
});

// A name that cannot exist (too long, control characters) is refused before it is
// looked up, and so never echoed in a "not found".
const secretNameParam = z.object({ secretName: boundedName('secretName', 255) });

type Scope = { workspaceSlug?: string; workspaceId?: string; projectId?: string };

function register(router: Router, svc: Services, paths: { list: string; one: string }, projectOf: (q: Scope) => ProjectRef) {
  router.get(paths.list, async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(listQuery, queryObject(req.query));
    const secrets = await svc.secrets.list(actor, {
      project: projectOf(q),
      environment: q.environment,
      secretPath: q.secretPath,
      recursive: q.recursive,
      expandSecretReferences: q.expandSecretReferences,
      viewSecretValue: q.viewSecretValue,
    });
    // Imports are accepted but this service has none to include.
    return { body: { secrets: secrets.map(secretRaw), imports: [] } };
  });

  router.get(paths.one, async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(getQuery, queryObject(req.query));
    const { secretName } = parse(secretNameParam, req.params);
    const secret = await svc.secrets.get(actor, {
      project: projectOf(q),
      environment: q.environment,
      secretPath: q.secretPath,
      secretName,
      version: q.version,
      type: q.type,
      expandSecretReferences: q.expandSecretReferences,
      viewSecretValue: q.viewSecretValue,
    });
    return { body: { secret: secretRaw(secret) } };
  });
}

export function registerSecretReadRoutes(router: Router, svc: Services) {
  register(router, svc, { list: '/api/v3/secrets/raw', one: '/api/v3/secrets/raw/:secretName' }, projectRef);
  register(router, svc, { list: '/api/v4/secrets', one: '/api/v4/secrets/:secretName' }, projectIdRef);
}
