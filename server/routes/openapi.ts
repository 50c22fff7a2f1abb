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

function operation(r: DeclaredRoute) {
  const parameters: unknown[] = [];
  const pathSchema = r.params ? (jsonSchema(r.params, 'input').properties as Record<string, JsonSchema> | undefined) : undefined;
  for (const name of paramNames(r.path)) {
    parameters.push({ name, in: 'path', required: true, schema: pathSchema?.[name] ?? { type: 'string' } });
  }
  if (r.query) {
    const q = jsonSchema(r.query, 'input');
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties as Record<string, JsonSchema> | undefined) ?? {})) {
      parameters.push({ name, in: 'query', required: required.has(name), schema });
    }
  }
  const ok: Record<string, unknown> = { description: 'OK' };
  const content: Record<string, unknown> = {};
  if (r.response) content['application/json'] = { schema: jsonSchema(r.response, 'output') };
  for (const type of r.alsoProduces ?? []) content[type] = { schema: { type: 'string' } };
  if (Object.keys(content).length > 0) ok.content = content;
  return {
    operationId: `${r.method.toLowerCase()} ${r.path}`,
    summary: r.summary,
    tags: [r.path.split('/')[3] ?? 'service'],
    security: SECURITY[r.caller],
    ...(parameters.length ? { parameters } : {}),
    ...(r.body
      ? {
          requestBody: {
            required: false,
            content: {
              'application/json': { schema: jsonSchema(r.body, 'input') },
              'application/x-www-form-urlencoded': { schema: jsonSchema(r.body, 'input') },
            },
          },
        }
      : {}),
    responses: {
      200: ok,
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
