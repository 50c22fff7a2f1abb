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

export const queryBool = z.enum(['true', 'false']).transform((v) => v === 'true');

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

export function projectRef(q: { workspaceSlug?: string; workspaceId?: string }): { slug: string } | { id: string } {
  if (q.workspaceId) return { id: q.workspaceId };
  if (q.workspaceSlug) return { slug: q.workspaceSlug };
  throw new AppError('VALIDATION', 'Either workspaceId or workspaceSlug is required');
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
 * object is returned as is, for the schema to refuse.
 */
export function bodyAndQuery(req: HttpRequest): unknown {
  const body = parseJsonBody(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return { ...queryObject(req.query), ...(body as Record<string, unknown>) };
}

/** The project a v3 write names: `workspaceId`, or `projectSlug` / `workspaceSlug`. */
export function v3ProjectRef(b: { workspaceId?: string; projectSlug?: string; workspaceSlug?: string }): ProjectRef {
  if (b.workspaceId) return { id: b.workspaceId };
  const slug = b.projectSlug || b.workspaceSlug;
  if (slug) return { slug };
  throw new AppError('VALIDATION', 'Either workspaceId or projectSlug is required');
}

/** The project a v4 route or an admin route names by id: `projectId` (or the older `workspaceId`). */
export function projectIdRef(b: { projectId?: string; workspaceId?: string }): ProjectRef {
  const id = b.projectId || b.workspaceId;
  if (id) return { id };
  throw new AppError('VALIDATION', 'projectId is required');
}
