// Input helpers shared by the administration and write routes (the read routes' own
// helpers live in input.ts).
import { z } from 'zod';
import type { ProjectRef } from '../domain/access.js';
import { AppError } from '../errors.js';
import { parseJsonBody } from '../http/body.js';
import type { HttpRequest } from '../http/types.js';
import { queryBool, queryObject } from './input.js';

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
