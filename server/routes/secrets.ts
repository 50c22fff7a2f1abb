// The secret routes of both API generations, declared once: v3 names the project by
// workspaceSlug / workspaceId (reads) or projectSlug / workspaceId (writes), v4 by
// projectId (the newer CLI). v3/secrets.ts and v4/secrets.ts choose the paths.
import { z } from 'zod';
import type { Actor, ProjectRef } from '../domain/access.js';
import type { Origin } from '../domain/pipeline.js';
import { AnswerDeps, noneMatch } from '../domain/answerTags.js';
import { MAX_BATCH, type SecretView } from '../domain/secrets.js';
import { AppError } from '../errors.js';
import type { Services } from '../services.js';
import type { HttpReply, HttpRequest } from '../http/types.js';
import type { Api } from './api.js';
import { boolish, boundedName, queryBool, queryInt, ref } from './input.js';
import { importedFolderSchema, importedRaw, oneSecret, rawListText, secretRaw, secretSchema } from './shape.js';

/** Large enough for certificates and key files; the body cap bounds the request anyway. */
const MAX_VALUE = 256 * 1024;

const value = (name: string) => z.string({ error: `${name} must be a string` }).max(MAX_VALUE, `${name} is too long`);
const comment = z.string({ error: 'secretComment must be a string' }).max(10_000, 'secretComment is too long');

// -- reads ---------------------------------------------------------------------------

const readScope = {
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

const listQuery = z.object({
  ...readScope,
  /** The spelling the CLI, the Agent and the SDKs send (on v4, and on v3 by the Java SDK). */
  includeImports: queryBool.optional(),
  recursive: queryBool.optional(),
  /** Infisical's tag filter (comma-separated slugs): keeps the secrets carrying one of them (an unknown slug matches none, as in Infisical). */
  tagSlugs: z.string().max(4096).optional(),
});

/** The slugs a `tagSlugs` filter names (none: no filter). */
const tagFilter = (raw: string | undefined) => (raw ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
const getQuery = z.object({
  ...readScope,
  // Decimal digits only: z.coerce would also take 0x1, 1e0 and ' 1'.
  version: queryInt('version', 1, 2_147_483_647).optional(),
  type: z.enum(['shared', 'personal']).optional(),
  /** The name Infisical's Node SDK sends for include_imports on a single read. */
  includeImports: queryBool.optional(),
});

// A name that cannot exist (too long, control characters) is refused before it is
// looked up, and so never echoed in a "not found".
const secretNameParam = z.object({ secretName: boundedName('secretName', 255) });

// -- writes --------------------------------------------------------------------------

const writeScope = {
  workspaceId: ref,
  projectSlug: ref,
  workspaceSlug: ref,
  projectId: ref,
  environment: z.string({ error: 'environment is required' }).min(1, 'environment is required').max(64),
  secretPath: z.string({ error: 'secretPath must be a string' }).max(1024).optional(),
  // Personal overrides do not exist here; saying "shared" is fine, anything else is refused.
  type: z.literal('shared', { error: 'type must be "shared": personal secrets are not supported' }).optional(),
  /** The name again (the CLI's and Terraform's bodies repeat it): must be the path's (checked by the handler). */
  secretName: z.string({ error: 'secretName must be a string' }).max(255).optional(),
  /** The explicit override for keys marked as never changing (e.g. IDP_SECRET_KEY). */
  overrideImmutable: boolish.optional(),
};

/**
 * Lists Infisical clients may send that this service has no use for (it keeps no secret
 * metadata): an empty list says exactly that and is accepted; a non-empty one is
 * refused, never dropped.
 */
const emptyList = (name: string, what: string) =>
  z.array(z.unknown(), { error: `${name} must be a list` }).max(0, `${what} are not supported: send an empty list or leave ${name} out`).optional();
const unsupportedLists = {
  /** The project tags the secret carries (ids; on a change, the whole new set). `null` (Terraform's unset tagIds) means absent. */
  tagIds: z
    .array(z.string({ error: 'tagIds must hold tag ids' }).max(64), { error: 'tagIds must be a list' })
    .max(50, 'tagIds may name at most 50 tags')
    .nullable()
    .optional()
    .transform((v) => v ?? undefined),
  secretMetadata: emptyList('secretMetadata', 'secret metadata').nullable().transform((v) => v ?? undefined),
};

/**
 * Secret reminders (Infisical's secretReminderNote / secretReminderRepeatDays /
 * secretReminderRecipients) are not kept here. Terraform sends them empty on every
 * write (`""`, `0`): empty or null says "no reminder" and is accepted; a reminder asked
 * for is refused, never dropped.
 */
const NO_REMINDERS = 'secret reminders are not supported';
const reminders = {
  secretReminderNote: z
    .union([z.literal(''), z.null()], { error: `secretReminderNote: ${NO_REMINDERS}: send "" or leave it out` })
    .optional(),
  secretReminderRepeatDays: z
    .union([z.literal(0), z.null()], { error: `secretReminderRepeatDays: ${NO_REMINDERS}: send 0 or leave it out` })
    .optional(),
  secretReminderRecipients: emptyList('secretReminderRecipients', 'secret reminders').nullable(),
};

// A create has no protected key to override: `overrideImmutable` is a field of changes
// and deletions only (refused here, as any field that would do nothing).
const { overrideImmutable: _override, secretName: _name, ...createScope } = writeScope;

const createBody = z.object({
  ...createScope,
  ...unsupportedLists,
  ...reminders,
  /** Terraform's spelling of the name: must be the path's (checked by the handler). */
  secretKey: z.string({ error: 'secretKey must be a string' }).max(255).optional(),
  secretValue: value('secretValue'),
  secretComment: comment.optional(),
  skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
});
const updateBody = z.object({
  ...writeScope,
  ...unsupportedLists,
  ...reminders,
  secretValue: value('secretValue').optional(),
  secretComment: comment.optional(),
  newSecretName: z.string({ error: 'newSecretName must be a string' }).max(255).optional(),
  skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
});
const deleteInput = z.object({
  ...writeScope,
  // The CLI's `secrets delete` says type "personal" unless told otherwise (Infisical/cli
  // packages/cmd/secrets.go): it asks to delete the caller's personal override, which
  // never exists here (answered as Infisical answers a missing one, by the handler).
  type: z.enum(['shared', 'personal'], { error: 'type must be "shared" or "personal"' }).optional(),
});
const batchBody = z.object({
  ...createScope,
  secrets: z
    .array(
      z.strictObject({
        ...unsupportedLists,
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

// Infisical's batch change and delete (PATCH and DELETE on the batch path; the .NET SDK's
// BulkUpdateSecret, the Python and Go SDKs' bulk calls, the web UI's overwrite).
const { secretName: _batchName, ...batchScope } = writeScope;
const batchUpdateBody = z.object({
  ...batchScope,
  mode: z.enum(['failOnNotFound', 'upsert'], { error: 'mode must be "failOnNotFound" or "upsert"' }).optional(),
  secrets: z
    .array(
      z.strictObject({
        ...unsupportedLists,
        ...reminders,
        secretKey: z.string({ error: 'secretKey is required' }).max(255),
        secretValue: value('secretValue').optional(),
        secretComment: comment.optional(),
        skipMultilineEncoding: z.boolean({ error: 'skipMultilineEncoding must be a boolean' }).optional(),
        newSecretName: z.string({ error: 'newSecretName must be a string' }).max(255).optional(),
        secretPath: z.string({ error: 'secretPath must be a string' }).max(1024).optional(),
      }),
      { error: 'secrets must be an array' },
    )
    .min(1, 'secrets must hold at least one secret')
    .max(MAX_BATCH, `secrets may hold at most ${MAX_BATCH} secrets`),
});
const batchDeleteBody = z.object({
  ...batchScope,
  secrets: z
    .array(
      z.strictObject({
        secretKey: z.string({ error: 'secretKey is required' }).max(255),
        type: z.literal('shared', { error: 'type must be "shared": personal secrets are not supported' }).optional(),
      }),
      { error: 'secrets must be an array' },
    )
    .min(1, 'secrets must hold at least one secret')
    .max(MAX_BATCH, `secrets may hold at most ${MAX_BATCH} secrets`),
});

export type ReadScope = { workspaceSlug?: string; workspaceId?: string; projectId?: string };
export type WriteScope = { workspaceId?: string; projectSlug?: string; workspaceSlug?: string; projectId?: string };

/** include_imports, or the SDK's includeImports: both given must agree. */
function includeImports(q: { include_imports?: boolean; includeImports?: boolean }): boolean | undefined {
  if (q.include_imports !== undefined && q.includeImports !== undefined && q.include_imports !== q.includeImports) {
    throw new AppError('VALIDATION', 'include_imports and includeImports disagree');
  }
  return q.include_imports ?? q.includeImports;
}

/**
 * What a read does when the query leaves a flag out. v3: neither imports nor expansion
 * (Infisical's v3). v4: both (the CLI sends them "always explicitly, since v4 defaults
 * these to true", Infisical/cli packages/api/api.go CallGetSecretsV4; the operator's
 * v1beta1 InfisicalStaticSecret sends neither and relies on it, internal/api/secrets_v4.go).
 */
export interface ReadDefaults {
  includeImports: boolean;
  expandSecretReferences: boolean;
}

/** `ETag` on a 200, or the 304 (no body) when If-None-Match names the answer's tag. */
function tagged(reply: HttpReply, tag: string, ifNoneMatch: string | undefined): HttpReply {
  if (ifNoneMatch !== undefined && noneMatch(ifNoneMatch, tag)) return { status: 304, headers: { etag: tag } };
  reply.headers = { ...reply.headers, etag: tag };
  return reply;
}

/** What a read's tag covers of the request: the route, its path parameters, the query as sent. */
const requestText = (route: string, req: HttpRequest, param = '') => `${route}\u0000${param}\u0000${req.rawQuery ?? req.query.toString()}`;

/** What a create, a change or a batch item says of a secret, in the domain's names. */
type Contents = { secretValue?: string; secretComment?: string; skipMultilineEncoding?: boolean; tagIds?: string[] };
const contents = <B extends Contents>(b: B): { value: B['secretValue']; comment?: string; skipMultilineEncoding?: boolean; tagIds?: string[] } => ({
  value: b.secretValue,
  comment: b.secretComment,
  skipMultilineEncoding: b.skipMultilineEncoding,
  tagIds: b.tagIds,
});

/** The name in the path: URL-decoded by the router; the domain validates it. */
function secretName(params: { secretName: string }): string {
  if (params.secretName.trim() === '') throw new AppError('VALIDATION', 'secretName is required');
  return params.secretName;
}

export interface SecretPaths<L extends string, O extends string, B extends string> {
  list: L;
  one: O;
  batch: B;
}

export function registerSecretRoutes<L extends string, O extends string, B extends string>(
  api: Api,
  svc: Services,
  paths: SecretPaths<L, O, B>,
  project: { read: (q: ReadScope) => ProjectRef; write: (b: WriteScope) => ProjectRef },
  defaults: ReadDefaults = { includeImports: false, expandSecretReferences: false },
) {
  const where = (b: WriteScope & { environment: string; secretPath?: string }) => ({ project: project.write(b), environment: b.environment, secretPath: b.secretPath });
  /** The secret a write names: where (body) and which (path), and the request's origin. */
  const named = (b: WriteScope & { environment: string; secretPath?: string; secretName?: string; secretKey?: string }, params: unknown, origin: Origin) => {
    const key = secretName(params as { secretName: string });
    // The name repeated in the body names the same secret, or the request is ambiguous.
    for (const field of ['secretName', 'secretKey'] as const) {
      if (b[field] !== undefined && b[field] !== key) throw new AppError('VALIDATION', `${field} must be the secret name in the path`);
    }
    return { ...where(b), key, origin };
  };

  /**
   * A deletion of the caller's personal override (the CLI's default type). None exists
   * here, so the answer is Infisical's for a missing one (secret-v2-bridge-service.ts
   * deleteSecret): a machine identity has none by definition (400 "Must be user to
   * delete personal secret"), a person's is not found (404 "Secret not found"). Asked
   * only of a caller who may delete in the project, so it tells no one else anything.
   */
  async function noPersonalSecret(actor: Actor, target: { project: ProjectRef; environment: string }): Promise<never> {
    const { project: p } = await svc.access.authorize(actor, target.project, 'secrets:write');
    svc.access.environment(p, target.environment);
    if (actor.kind === 'identity') throw new AppError('BAD_REQUEST', 'Must be user to delete personal secret');
    throw new AppError('NOT_FOUND', 'Secret not found');
  }

  // A list's arguments, made once per parsed query: a cached query (cacheQuery, frozen) is
  // the same object on every request with the same text. Made per request, these objects
  // were half of what the main thread promoted to the old generation under the operator's
  // read load (a sampling heap profile of objects that outlived young collections): they
  // are reached from old objects until the next full collection. Frozen: shared, never changed.
  const listArgsByQuery = new WeakMap<z.infer<typeof listQuery>, ReturnType<typeof makeListArgs>>();
  const makeListArgs = (q: z.infer<typeof listQuery>) => {
    const read = Object.freeze({
      project: project.read(q),
      environment: q.environment,
      secretPath: q.secretPath,
      expandSecretReferences: q.expandSecretReferences ?? defaults.expandSecretReferences,
      viewSecretValue: q.viewSecretValue,
    });
    // A tag filter keeps the secrets carrying one of its tags (imported ones too); a
    // slug no tag has matches none, never "every secret".
    return Object.freeze({
      read,
      list: Object.freeze({ ...read, recursive: q.recursive }),
      tags: Object.freeze(tagFilter(q.tagSlugs)),
      withImports: includeImports(q) ?? defaults.includeImports,
    });
  };
  const listArgs = (q: z.infer<typeof listQuery>) => {
    if (!Object.isFrozen(q)) return makeListArgs(q);
    let args = listArgsByQuery.get(q);
    if (args === undefined) listArgsByQuery.set(q, (args = makeListArgs(q)));
    return args;
  };

  api.get(
    paths.list,
    {
      caller: 'any',
      summary: 'The secrets of one environment and folder, decrypted (the operator\'s read); with include_imports=true, also the folders it imports, in order',
      query: listQuery,
      cacheQuery: true,
      response: z.object({ secrets: z.array(secretSchema), imports: z.array(importedFolderSchema) }),
    },
    async ({ actor, query: q, req }) => {
      const { read, list, tags, withImports } = listArgs(q);
      const request = requestText(paths.list, req);
      const ifNoneMatch = req.headers['if-none-match'];
      if (ifNoneMatch !== undefined) {
        const same = svc.secrets.notModified(actor, read, request, ifNoneMatch);
        if (same instanceof Promise ? await same : same) return { status: 304, headers: { etag: ifNoneMatch } };
      }
      const deps = new AnswerDeps();
      const imports = withImports ? await svc.secrets.imports(actor, { ...read, deps }) : [];
      if (tags.length === 0 && imports.length === 0) {
        // The hot path: the answer's bytes, rendered where the values are opened.
        const bytes = await svc.secrets.listRendered(actor, list, rawListText, deps);
        if (bytes !== undefined) return tagged({ raw: true, body: bytes }, svc.secrets.entityTag(request, deps), ifNoneMatch);
      }
      const secrets = await svc.secrets.list(actor, { ...list, deps });
      const keep = (all: SecretView[]) => (tags.length === 0 ? all : all.filter((x) => x.tags?.some((t) => tags.includes(t.slug))));
      return tagged({ body: { secrets: keep(secrets).map(secretRaw), imports: imports.map((i) => importedRaw(i, keep)) } }, svc.secrets.entityTag(request, deps), ifNoneMatch);
    },
  );

  api.get(
    paths.one,
    { caller: 'any', summary: 'One secret by name (or one of its versions)', params: secretNameParam, query: getQuery, response: oneSecret },
    async ({ actor, params, query: q, req }) => {
      const where = { project: project.read(q), environment: q.environment, secretPath: q.secretPath };
      const request = requestText(paths.one, req, params.secretName);
      const ifNoneMatch = req.headers['if-none-match'];
      if (ifNoneMatch !== undefined) {
        const same = svc.secrets.notModified(actor, where, request, ifNoneMatch);
        if (same instanceof Promise ? await same : same) return { status: 304, headers: { etag: ifNoneMatch } };
      }
      const deps = new AnswerDeps();
      const secret = await svc.secrets.get(actor, {
        ...where,
        secretName: params.secretName,
        version: q.version,
        type: q.type,
        expandSecretReferences: q.expandSecretReferences ?? defaults.expandSecretReferences,
        viewSecretValue: q.viewSecretValue,
        includeImports: includeImports(q) ?? defaults.includeImports,
        deps,
      });
      return tagged({ body: { secret: secretRaw(secret) } }, svc.secrets.entityTag(request, deps), ifNoneMatch);
    },
  );

  api.post(paths.one, { caller: 'any', summary: 'Create a secret', body: createBody, response: oneSecret }, async ({ actor, params, body: b, origin }) => {
    const secret = await svc.secrets.create(actor, { ...named(b, params, origin), ...contents(b) });
    return { body: { secret: secretRaw(secret) } };
  });

  api.patch(
    paths.one,
    { caller: 'any', summary: 'Change a secret\'s value, comment or name (a new version)', body: updateBody, response: oneSecret },
    async ({ actor, params, body: b, origin }) => {
      const secret = await svc.secrets.update(actor, { ...named(b, params, origin), ...contents(b), newKey: b.newSecretName, allowImmutableChange: b.overrideImmutable });
      return { body: { secret: secretRaw(secret) } };
    },
  );

  // Clients send DELETE's fields in the body or in the query string.
  api.delete(
    paths.one,
    { caller: 'any', summary: 'Delete a secret and its versions', body: deleteInput, bodyFrom: 'body+query', response: oneSecret },
    async ({ actor, params, body: b, origin }) => {
      const target = named(b, params, origin);
      if (b.type === 'personal') await noPersonalSecret(actor, target);
      const secret = await svc.secrets.remove(actor, { ...target, allowImmutableChange: b.overrideImmutable });
      return { body: { secret: secretRaw(secret) } };
    },
  );

  api.post(
    paths.batch,
    { caller: 'any', summary: 'Create many secrets in one folder: all or none', body: batchBody, response: z.object({ secrets: z.array(secretSchema) }) },
    async ({ actor, body: b, origin }) => {
      const secrets = await svc.secrets.createMany(actor, {
        ...where(b),
        secrets: b.secrets.map((x) => ({ key: x.secretKey, ...contents(x) })),
        origin,
      });
      return { body: { secrets: secrets.map(secretRaw) } };
    },
  );

  api.patch(
    paths.batch,
    {
      caller: 'any',
      summary: 'Change many secrets in one transaction, all or none; mode upsert creates the missing ones',
      body: batchUpdateBody,
      response: z.object({ secrets: z.array(secretSchema) }),
    },
    async ({ actor, body: b, origin }) => {
      const secrets = await svc.secrets.changeMany(actor, {
        ...where(b),
        mode: b.mode,
        origin,
        secrets: b.secrets.map((x) => ({ key: x.secretKey, ...contents(x), newKey: x.newSecretName, secretPath: x.secretPath, allowImmutableChange: b.overrideImmutable })),
      });
      return { body: { secrets: secrets.map(secretRaw) } };
    },
  );

  api.delete(
    paths.batch,
    { caller: 'any', summary: 'Delete many secrets of one folder in one transaction, all or none', body: batchDeleteBody, response: z.object({ secrets: z.array(secretSchema) }) },
    async ({ actor, body: b, origin }) => {
      const secrets = await svc.secrets.removeMany(actor, { ...where(b), keys: b.secrets.map((x) => x.secretKey), allowImmutableChange: b.overrideImmutable, origin });
      return { body: { secrets: secrets.map(secretRaw) } };
    },
  );
}
