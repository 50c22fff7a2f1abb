// Input parsing shared by the routes: zod schemas for query strings and bodies, with
// failures turned into the contract's 422.
import { z } from 'zod';
import { AppError } from '../errors.js';

/** Query values: an empty value means "absent" (ESO sends `workspaceId=`). */
export function queryObject(q: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of q) if (v !== '' && !(k in out)) out[k] = v;
  return out;
}

export const queryBool = z.enum(['true', 'false']).transform((v) => v === 'true');

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
