// Input parsing shared by the routes: zod schemas for query strings and bodies, with
// failures turned into the contract's 422.
import { z } from 'zod';
import type { ProjectRef } from '../domain/access.js';
import { AppError } from '../errors.js';
import { parseJsonBody } from '../http/body.js';
import type { HttpRequest } from '../http/types.js';

/** Query values: an empty value means "absent" (ESO sends `workspaceId=`). */
export function queryObject(q: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of q) if (v !== '' && !(k in out)) out[k] = v;
  return out;
}

/** `true` / `false`, and Python's `True` / `False` (the Python SDK's query strings). */
export const queryBool = z.enum(['true', 'false', 'True', 'False']).transform((v) => v === 'true' || v === 'True');

/** A non-negative integer, as JSON number or (form bodies) a decimal string. */
export const intField = (name: string) =>
  z.union([z.number({ error: `${name} must be an integer` }), z.string().regex(/^\d{1,10}$/, `${name} must be an integer`).transform(Number)])
    .pipe(z.number().int(`${name} must be an integer`).min(0, `${name} must not be negative`).max(2_147_483_647));

/** A decimal integer in a query string or path segment, within [min, max]. */
export const queryInt = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,10}$/, `${name} must be an integer`)
    .transform(Number)
    .pipe(z.number().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

/** No id, slug or name holds a control character; refusing them keeps them out of messages and SQL. */
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

/**
 * A required name from a path segment or query value (project slug, environment slug,
 * secret name), within `max` characters and free of control characters. Failures say
 * what is wrong without echoing the value.
 */
export const boundedName = (label: string, max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `${label} is required` : `${label} must be a string`) })
    .min(1, `${label} is required`)
    .max(max, `${label} must be at most ${max} characters`)
    .regex(NO_CONTROL, `${label} must not contain control characters`);

export function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const details = r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  const first = details[0]!;
  throw new AppError('VALIDATION', first.path ? `${first.path}: ${first.message}` : first.message, { details });
}

/**
 * The project a request names. Clients name it by id (`workspaceId`, `projectId`) or by
 * slug (`workspaceSlug`, `projectSlug`), some with two fields at once (the SDK sends
 * `projectId` and `workspaceId`). Every field given is applied: two ids (or two slugs)
 * that differ, or an id and a slug together, are a 422 naming them, never one of them
 * silently ignored.
 */
function namedProject(b: Record<string, string | undefined>, idFields: readonly string[], slugFields: readonly string[], missing: string): ProjectRef {
  const given = (fields: readonly string[]) => fields.filter((f) => b[f] !== undefined && b[f] !== '');
  const ids = given(idFields);
  const slugs = given(slugFields);
  for (const group of [ids, slugs]) {
    const [first, ...rest] = group;
    const other = rest.find((f) => b[f]!.toLowerCase() !== b[first!]!.toLowerCase());
    if (other) throw new AppError('VALIDATION', `${first} and ${other} name different projects`);
  }
  if (ids.length > 0 && slugs.length > 0) throw new AppError('VALIDATION', `Name the project by id or by slug, not both (${ids[0]}, ${slugs[0]})`);
  if (ids.length > 0) return { id: b[ids[0]!]! };
  if (slugs.length > 0) return { slug: b[slugs[0]!]! };
  throw new AppError('VALIDATION', missing);
}

/** v3 reads: `workspaceSlug` or `workspaceId` (or `projectId`). */
export function projectRef(q: { workspaceSlug?: string; workspaceId?: string; projectId?: string }): ProjectRef {
  return namedProject(q, ['workspaceId', 'projectId'], ['workspaceSlug'], 'Either workspaceId or workspaceSlug is required');
}

/** A flag sent as a JSON boolean (body) or as "true"/"false" (query string or form). */
export const boolish = z.union([z.boolean(), queryBool]);

/** An id or slug as clients send them: bounded, and an empty string means absent. */
export const ref = z
  .string()
  .max(64)
  // No id or slug holds control characters; a NUL would reach the database (which
  // refuses it in text) instead of being a plain "not found".
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/**
 * The body of a request that may also carry its fields in the query string (DELETE:
 * some clients send a body, others a query). Body fields win; a body that is not an
 * object is returned as is, for the schema to refuse. Only the query parameters the
 * route declares (`fields`) are taken: others are tolerated, as on every route, while
 * an unknown field in the body is refused.
 */
export function bodyAndQuery(req: HttpRequest, fields?: ReadonlySet<string>): unknown {
  const body = parseJsonBody(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const query = queryObject(req.query);
  if (fields) for (const k of Object.keys(query)) if (!fields.has(k)) delete query[k];
  return { ...query, ...(body as Record<string, unknown>) };
}

/** The project a v3 write names: `workspaceId` (or `projectId`), or `projectSlug` / `workspaceSlug`. */
export function v3ProjectRef(b: { workspaceId?: string; projectSlug?: string; workspaceSlug?: string; projectId?: string }): ProjectRef {
  return namedProject(b, ['workspaceId', 'projectId'], ['projectSlug', 'workspaceSlug'], 'Either workspaceId or projectSlug is required');
}

/** The project a v4 route or an admin route names by id: `projectId` (or the older `workspaceId`); a slug field given is refused, not ignored. */
export function projectIdRef(b: { projectId?: string; workspaceId?: string; projectSlug?: string; workspaceSlug?: string }): ProjectRef {
  const ref = namedProject(b, ['projectId', 'workspaceId'], ['projectSlug', 'workspaceSlug'], 'projectId is required');
  if ('slug' in ref) throw new AppError('VALIDATION', 'projectId is required (this route names the project by id)');
  return ref;
}
