// The Infisical secret object, field for field: ESO's SDK breaks on a known field with
// the wrong type, so every field here has exactly the contract's type.
import { z } from 'zod';
import type { ImportedFolder, SecretView } from '../domain/secrets.js';

// Rows live in the folder cache, so their Date objects recur on every read of the
// operator's hot path; formatting each once saves a measurable share of a list.
const isoOf = new WeakMap<Date, string>();
function iso(d: Date): string {
  let s = isoOf.get(d);
  if (s === undefined) {
    s = d.toISOString();
    isoOf.set(d, s);
  }
  return s;
}

/** An ISO 8601 timestamp as the answers carry them. */
export const isoString = z.string().describe('ISO 8601 date-time');

/** A tag as a secret carries it (Infisical's {id, slug, name, color}). */
export const tagRefSchema = z.object({ id: z.string(), slug: z.string(), name: z.string(), color: z.string().nullable() });

/** Infisical's secret object: ESO breaks on a known field with another type. */
export const secretSchema = z.object({
  id: z.string(),
  _id: z.string(),
  workspace: z.string(),
  environment: z.string(),
  version: z.number().int(),
  type: z.literal('shared'),
  secretKey: z.string(),
  secretValue: z.string(),
  secretComment: z.string(),
  secretPath: z.string(),
  secretValueHidden: z.boolean(),
  skipMultilineEncoding: z.boolean(),
  tags: z.array(tagRefSchema),
  secretMetadata: z.array(z.never()),
  createdAt: isoString,
  updatedAt: isoString,
});

export const oneSecret = z.object({ secret: secretSchema });

/** The contract's error body (every 4xx and 5xx). */
export const errorSchema = z.object({
  reqId: z.string(),
  statusCode: z.number().int(),
  message: z.string(),
  error: z.string(),
  details: z.unknown().optional(),
  /** The readiness probe's 503: each check, and why it failed. */
  checks: z.record(z.string(), z.string()).optional(),
});

// A slot's stand-in while a row is shaped: JSON.stringify turns the control characters
// into \u escapes, and no other field can hold them (names, paths and ids refuse control
// characters); the count is checked anyway.
const SLOT = '\u0000\u0001slot\u0001\u0000';
const SLOT_JSON = JSON.stringify(SLOT);

/**
 * The list answer `{ secrets: [...], imports: [] }` of `views` as fixed text around the
 * slots of each value and (when it has one) comment: exactly the bytes JSON.stringify
 * gives for `{ secrets: views.map(secretRaw), imports: [] }` once the slots are filled
 * with JSON string literals. A crypto worker fills them (secrets.listRendered).
 */
export function rawListSegments(views: readonly SecretView[], hasComment: readonly boolean[]): string[] | undefined {
  const parts: string[] = [];
  for (let i = 0; i < views.length; i++) {
    const v = views[i]!;
    parts.push(JSON.stringify(secretRaw({ ...v, value: SLOT, comment: hasComment[i] ? SLOT : '', valueHidden: false })));
  }
  const text = `{"secrets":[${parts.join(',')}],"imports":[]}`;
  const segments = text.split(SLOT_JSON);
  let slots = 0;
  for (const h of hasComment) slots += h ? 2 : 1;
  return segments.length === slots + 1 ? segments : undefined;
}

export function secretRaw(s: SecretView): z.infer<typeof secretSchema> {
  return {
    id: s.id,
    _id: s.id,
    workspace: s.projectId,
    environment: s.environment,
    version: s.version,
    type: 'shared' as const,
    secretKey: s.key,
    secretValue: s.value,
    secretComment: s.comment,
    secretPath: s.path,
    secretValueHidden: s.valueHidden,
    skipMultilineEncoding: s.skipMultilineEncoding,
    tags: s.tags ?? [],
    secretMetadata: [] as never[],
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}

/** A secret inside an import of a list answer: Infisical's secret without its dates. */
export const importedSecretSchema = secretSchema.omit({ createdAt: true, updatedAt: true });

/** One import of a list answer (include_imports=true), as Infisical shapes it. */
export const importedFolderSchema = z.object({
  secretPath: z.string(),
  environment: z.string(),
  folderId: z.string(),
  secrets: z.array(importedSecretSchema),
});

/** One import of a list answer, its secrets kept by `keep` (the list's tag filter). */
export function importedRaw(i: ImportedFolder, keep: (secrets: SecretView[]) => SecretView[] = (x) => x): z.infer<typeof importedFolderSchema> {
  return {
    secretPath: i.secretPath,
    environment: i.environment,
    folderId: i.folderId,
    secrets: keep(i.secrets).map((s) => {
      const { createdAt: _c, updatedAt: _u, ...rest } = secretRaw(s);
      return rest;
    }),
  };
}
