// Secret writes, on Infisical's two generations of paths:
//   v3: POST|PATCH|DELETE /api/v3/secrets/raw/:secretName, POST /api/v3/secrets/batch/raw
//       (the project named by workspaceId or projectSlug);
//   v4: POST|PATCH|DELETE /api/v4/secrets/:secretName, POST /api/v4/secrets/batch
//       (the project named by projectId, as the newer CLI sends it).
import { z } from 'zod';
import type { ProjectRef } from '../domain/access.js';
import { MAX_BATCH } from '../domain/secrets.js';
import { AppError } from '../errors.js';
import { parseJsonBody } from '../http/body.js';
import type { HttpRequest, Router } from '../http/types.js';
import type { Services } from '../services.js';
import { parse } from './input.js';
import { secretRaw } from './shape.js';
import { bodyAndQuery, boolish, projectIdRef, ref, v3ProjectRef } from './writeInput.js';

/** Large enough for certificates and key files; the body cap bounds the request anyway. */
const MAX_VALUE = 256 * 1024;

const value = (name: string) => z.string({ error: `${name} must be a string` }).max(MAX_VALUE, `${name} is too long`);
const comment = z.string({ error: 'secretComment must be a string' }).max(10_000, 'secretComment is too long');

const scope = {
  workspaceId: ref,
  projectSlug: ref,
  workspaceSlug: ref,
  projectId: ref,
  environment: z.string({ error: 'environment is required' }).min(1, 'environment is required').max(64),
  secretPath: z.string({ error: 'secretPath must be a string' }).max(1024).optional(),
  // Personal overrides do not exist here; saying "shared" is fine, anything else is refused.
  type: z.literal('shared', { error: 'type must be "shared": personal secrets are not supported' }).optional(),
  /** The explicit override for keys marked as never changing (e.g. IDP_SECRET_KEY). */
  overrideImmutable: boolish.optional(),
};

const createBody = z.object({
  ...scope,
  secretValue: value('secretValue'),
  secretComment: comment.optional(),
  skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
});
const updateBody = z.object({
  ...scope,
  secretValue: value('secretValue').optional(),
  secretComment: comment.optional(),
  newSecretName: z.string({ error: 'newSecretName must be a string' }).max(255).optional(),
  skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
});
const deleteInput = z.object(scope);
const batchBody = z.object({
  ...scope,
  secrets: z
    .array(
      z.object({
        secretKey: z.string({ error: 'secretKey is required' }).max(255),
        secretValue: value('secretValue'),
        secretComment: comment.optional(),
        skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
      }),
      { error: 'secrets must be an array' },
    )
    .min(1, 'secrets must hold at least one secret')
    .max(MAX_BATCH, `secrets may hold at most ${MAX_BATCH} secrets`),
});

type Scope = z.output<z.ZodObject<typeof scope>>;

/** The name in the path: URL-decoded by the router; the domain validates it. */
function secretName(req: HttpRequest): string {
  const name = req.params.secretName;
  if (name === undefined || name.trim() === '') throw new AppError('VALIDATION', 'secretName is required');
  return name;
}

function register(router: Router, svc: Services, paths: { one: string; batch: string }, projectOf: (b: Scope) => ProjectRef) {
  const where = (b: Scope) => ({ project: projectOf(b), environment: b.environment, secretPath: b.secretPath });

  router.post(paths.one, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(createBody, parseJsonBody(req));
    const secret = await svc.secrets.create(actor, {
      ...where(b),
      key: secretName(req),
      value: b.secretValue,
      comment: b.secretComment,
      skipMultilineEncoding: b.skipMultilineEncoding,
    });
    return { body: { secret: secretRaw(secret) } };
  });

  router.patch(paths.one, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(updateBody, parseJsonBody(req));
    const secret = await svc.secrets.update(actor, {
      ...where(b),
      key: secretName(req),
      value: b.secretValue,
      comment: b.secretComment,
      newKey: b.newSecretName === '' ? undefined : b.newSecretName,
      skipMultilineEncoding: b.skipMultilineEncoding,
      allowImmutableChange: b.overrideImmutable,
    });
    return { body: { secret: secretRaw(secret) } };
  });

  // Clients send DELETE's fields in the body or in the query string.
  router.delete(paths.one, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(deleteInput, bodyAndQuery(req));
    const secret = await svc.secrets.remove(actor, { ...where(b), key: secretName(req), allowImmutableChange: b.overrideImmutable });
    return { body: { secret: secretRaw(secret) } };
  });

  router.post(paths.batch, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(batchBody, parseJsonBody(req));
    const secrets = await svc.secrets.createMany(actor, {
      ...where(b),
      secrets: b.secrets.map((x) => ({ key: x.secretKey, value: x.secretValue, comment: x.secretComment, skipMultilineEncoding: x.skipMultilineEncoding })),
    });
    return { body: { secrets: secrets.map(secretRaw) } };
  });
}

export function registerSecretWriteRoutes(router: Router, svc: Services) {
  register(router, svc, { one: '/api/v3/secrets/raw/:secretName', batch: '/api/v3/secrets/batch/raw' }, v3ProjectRef);
  register(router, svc, { one: '/api/v4/secrets/:secretName', batch: '/api/v4/secrets/batch' }, projectIdRef);
}
