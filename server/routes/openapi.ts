// The API's description, generated from the route table: every declared route with its
// path parameters, query, body and answer, from the same zod schemas that parse the
// requests (so the document cannot drift from what the service accepts). Served at
// GET /api/docs/openapi.json; test/helpers/http.ts checks every answer the test suite
// gets against it.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Services } from '../services.js';
import type { Api, Caller, DeclaredRoute } from './api.js';
import { errorSchema } from './shape.js';

export const OPENAPI_PATH = '/api/docs/openapi.json';

type JsonSchema = Record<string, unknown>;

/** JSON Schema 2020-12 of a zod schema, as OpenAPI 3.1 embeds it (no $schema of its own). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

/** `/a/:id/b` → `/a/{id}/b`. */
export const openApiPath = (pattern: string) => pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

const paramNames = (pattern: string) => [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);

const SECURITY: Record<Caller, unknown[]> = {
  none: [],
  any: [{ bearer: [] }, { session: [] }],
  user: [{ bearer: [] }, { session: [] }],
};

/**
 * A name a client generator can use: the method, then the path's segments after the API
 * version in camelCase, a parameter as `By<Name>`. `GET /api/v3/secrets/raw/:secretName`
 * → `getV3SecretsRawBySecretName`. One per method and path, so unique (the test checks).
 */
export function operationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((s) => s !== '' && s !== 'api')
    .flatMap((s) => (s.startsWith(':') ? ['by', ...s.slice(1).split(/[-_]/)] : s.split(/[-_.]/)))
    .filter((w) => w !== '');
  const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);
  return method.toLowerCase() + words.map(cap).join('');
}

/** Path segments that name no resource of their own (the next one does). */
const GROUPING_SEGMENTS = new Set(['auth', 'organization', 'admin', 'docs']);

/** The resource an operation belongs to: the first segment after the version that names one. */
export function resourceTag(path: string): string {
  const segments = path.split('/').filter((s) => s !== '' && s !== 'api' && !/^v\d+$/.test(s) && !s.startsWith(':'));
  if (segments.length === 0) return 'service';
  const first = segments[0]!;
  if (GROUPING_SEGMENTS.has(first) && segments.length > 1) return segments[1]!;
  return first;
}

/**
 * What each query and path parameter means. A parameter whose zod schema carries a
 * `.describe()` uses that; every other name the routes declare is here (the test fails
 * on a parameter with neither).
 */
export const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  workspaceId: "The project's id (Infisical's name for a project is workspace)",
  workspaceSlug: "The project's slug",
  projectId: "The project's id",
  projectSlug: "The project's slug",
  environment: "The environment's slug (for example `prod`)",
  secretPath: 'The folder path, `/` for the root (default `/`)',
  path: 'The folder path, `/` for the root',
  secretName: "The secret's key",
  secretId: "The secret's id",
  type: 'The secret type: `shared` (only shared secrets exist here; `personal` is refused)',
  version: 'A version number (1 for the first)',
  expandSecretReferences: 'Replace `${...}` references in values with what they name (`true`/`false`)',
  includeImports: 'Also return the secrets of imported folders (`true`/`false`)',
  force: 'Delete even when it holds secrets (`true`/`false`)',
  overrideImmutable: 'Also delete secrets marked immutable (`true`/`false`)',
  directory: 'The folder path to list, `/` for the root (an older name of `path`)',
  lastSecretModified: 'Not supported: a request that sends it is refused (422)',
  folderIdOrName: "The folder's id, or its name in the folder `path` names",
  include_imports: 'Also return the secrets of imported folders (`true`/`false`)',
  recursive: 'Also return the secrets of every subfolder (`true`/`false`)',
  tagSlugs: 'Only secrets carrying one of these tags (comma-separated slugs)',
  metadataFilter: 'Only secrets whose metadata match (`key=value` pairs)',
  viewSecretValue: 'Return values (`true`) or hide them (`false`: `secretValueHidden` is true)',
  identityId: "The machine identity's id",
  webhookId: 'The webhook\'s id',
  clientSecretId: "The client secret's id",
  tokenId: "The access token's id",
  membershipId: "The membership's id",
  userId: "The person's id",
  roleId: "The role's id",
  roleSlug: "The role's slug",
  slug: 'The slug',
  id: 'The id',
  folderId: "The folder's id",
  folderName: "The folder's name",
  tagId: "The tag's id",
  tagSlug: "The tag's slug",
  secretImportId: "The import's id",
  envId: "The environment's id",
  environmentId: "The environment's id",
  organizationId: "The organization's id (there is one)",
  orgId: "The organization's id (there is one)",
  offset: 'How many results to skip (paging)',
  limit: 'How many results at most',
  startDate: 'Only entries at or after this time (ISO 8601)',
  endDate: 'Only entries at or before this time (ISO 8601)',
  eventType: 'Only entries of this audit event type',
  actor: 'Only entries by this actor (`user:<id>` or `identity:<id>`)',
  actorType: 'Only entries by this kind of actor',
  format: 'The export format',
  since: 'Events after this id (resume a stream)',
  email: "The person's e-mail address",
  search: 'Only results whose name contains this',
  orderBy: 'The field to order by',
  orderDirection: '`asc` or `desc`',
  direction: '`asc` or `desc`',
};

function parameterDescription(name: string, schema: JsonSchema | undefined): string | undefined {
  return typeof schema?.description === 'string' ? schema.description : PARAMETER_DESCRIPTIONS[name];
}

/** The contract's error answers (CONTRACT.md's error table) an operation can give. */
function errorResponses(r: DeclaredRoute, hasInput: boolean): Record<string, unknown> {
  const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
  const out: Record<string, unknown> = {};
  const login = /\/login$|\/signup$/.test(r.path);
  if (r.caller !== 'none' || login) out['401'] = ref('Unauthorized');
  if (r.caller !== 'none') out['403'] = ref('Forbidden');
  if (hasInput || r.caller !== 'none') out['404'] = ref('NotFound');
  if (hasInput) out['422'] = ref('UnprocessableEntity');
  if (login) out['429'] = ref('TooManyRequests');
  out['503'] = ref('ServiceUnavailable');
  return out;
}

function operation(r: DeclaredRoute) {
  const parameters: unknown[] = [];
  const pathSchema = r.params ? (jsonSchema(r.params, 'input').properties as Record<string, JsonSchema> | undefined) : undefined;
  for (const name of paramNames(r.path)) {
    const schema = pathSchema?.[name] ?? { type: 'string' };
    parameters.push({ name, in: 'path', required: true, description: parameterDescription(name, schema), schema });
  }
  if (r.query) {
    const q = jsonSchema(r.query, 'input');
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties as Record<string, JsonSchema> | undefined) ?? {})) {
      parameters.push({ name, in: 'query', required: required.has(name), description: parameterDescription(name, schema), schema });
    }
  }
  const bodySchema = r.body ? jsonSchema(r.body, 'input') : undefined;
  const hasInput = parameters.length > 0 || bodySchema !== undefined;
  const ok: Record<string, unknown> = { description: 'OK' };
  const content: Record<string, unknown> = {};
  if (r.response) content['application/json'] = { schema: jsonSchema(r.response, 'output') };
  for (const type of r.alsoProduces ?? []) content[type] = { schema: { type: 'string' } };
  if (Object.keys(content).length > 0) ok.content = content;
  return {
    operationId: operationId(r.method, r.path),
    summary: r.summary,
    tags: [resourceTag(r.path)],
    security: SECURITY[r.caller],
    ...(parameters.length ? { parameters } : {}),
    ...(bodySchema
      ? {
          requestBody: {
            // Required when it has a required field (a login's credentials).
            required: ((bodySchema.required as string[] | undefined) ?? []).length > 0,
            content: {
              'application/json': { schema: bodySchema },
              'application/x-www-form-urlencoded': { schema: bodySchema },
            },
          },
        }
      : {}),
    responses: {
      200: ok,
      ...errorResponses(r, hasInput),
      default: { description: 'An error, in the contract\'s shape', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    },
  };
}

export function openApiDocument(routes: readonly DeclaredRoute[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) (paths[openApiPath(r.path)] ??= {})[r.method.toLowerCase()] = operation(r);
  return {
    openapi: '3.1.0',
    info: {
      title: 'vault-standalone',
      version,
      description:
        "A self-hosted secret manager, wire-compatible with Infisical's machine API. Every error answers the Error schema.",
    },
    paths,
    components: {
      schemas: { Error: jsonSchema(errorSchema, 'output') },
      responses: Object.fromEntries(
        (
          [
            ['Unauthorized', 'No valid credentials: a missing, expired or revoked token, or refused login credentials'],
            ['Forbidden', 'Authenticated, but not allowed (role, trusted IPs, a machine on a people-only route)'],
            ['NotFound', 'The resource does not exist or the caller may not know of it'],
            ['UnprocessableEntity', 'Bad input: a field missing, malformed or not applied (its name in the message)'],
            ['TooManyRequests', 'Locked out after failed attempts, or over the per-source budget; see Retry-After'],
            ['ServiceUnavailable', 'A dependency is down (database, Redis for a required step, crypto): retry after Retry-After'],
          ] as const
        ).map(([name, description]) => [name, { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]),
      ),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A machine access token or a person\'s session token' },
        session: { type: 'apiKey', in: 'cookie', name: 'vault_session', description: 'The browser session; state-changing requests also send X-CSRF-Token' },
      },
    },
  };
}

/** The package's version (dist/server/routes → the package root). */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL(import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Registered after every other route: the document describes them all (itself included). */
export function registerOpenApiRoute(api: Api, _svc: Services) {
  let document: string | undefined;
  api.get(OPENAPI_PATH, { caller: 'none', summary: 'This document: the API as OpenAPI 3.1' }, () => {
    document ??= JSON.stringify(openApiDocument(api.routes, packageVersion()));
    return { raw: true, body: document };
  });
}
