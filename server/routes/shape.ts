// The Infisical secret object, field for field: ESO's SDK breaks on a known field with
// the wrong type, so every field here has exactly the contract's type.
import { z } from 'zod';
import type { FixedText, ImportedFolder, SecretView } from '../domain/secrets.js';

// Secrets written together share their timestamps, and the operator's hot path formats
// the same ones on every read: formatted once per instant, in a small bounded map keyed
// by the time (a WeakMap keyed by the Date cost more than toISOString on a first read
// of a 10,000-secret folder, whose rows are all new Date objects).
const ISO_CACHED = 4096;
const isoOf = new Map<number, string>();
function iso(d: Date): string {
  const time = d.getTime();
  let s = isoOf.get(time);
  if (s === undefined) {
    s = d.toISOString();
    if (isoOf.size >= ISO_CACHED) isoOf.clear();
    isoOf.set(time, s);
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

/**
 * The list answer `{ secrets: [...], imports: [] }` of `views` as fixed text around the
 * slots of each value and (when it has one) comment: exactly the bytes JSON.stringify
 * gives for `{ secrets: views.map(secretRaw), imports: [] }` once the slots are filled
 * with JSON string literals. A crypto worker fills them (secrets.listRendered).
 * A 10,000-secret folder's first read is ~4 MB of this text, kept as the folder version's
 * template: it is built row by row in secretRaw's order, fields that repeat (project,
 * environment, path, dates) formatted once, and joined every ROWS_PER_PIECE rows, so what
 * stays alive is a few large flat strings rather than thousands of small concatenations
 * that each young collection copies (the first read spent ~50 ms here and ~70 ms in
 * collections). test/server/routes/shape.test.ts holds it to JSON.stringify.
 */
export function rawListText(views: readonly SecretView[], hasComment: readonly boolean[]): FixedText {
  let slots = views.length;
  for (let i = 0; i < views.length; i++) if (hasComment[i]) slots++;
  const ends = new Uint32Array(slots + 1);
  const pieces: string[] = [];
  let rows: string[] = [];
  let length = 0;
  let slot = 0;
  const repeated = new Map<string, string>();
  const once = (x: string) => {
    let quoted = repeated.get(x);
    if (quoted === undefined) repeated.set(x, (quoted = literal(x)));
    return quoted;
  };
  const put = (text: string) => {
    rows.push(text);
    length += text.length;
  };
  put('{"secrets":[');
  for (let i = 0; i < views.length; i++) {
    const v = views[i]!;
    const id = literal(v.id);
    put(
      `${i === 0 ? '' : ','}{"id":${id},"_id":${id},"workspace":${once(v.projectId)},"environment":${once(v.environment)},` +
        `"version":${JSON.stringify(v.version)},"type":"shared","secretKey":${literal(v.key)},"secretValue":`,
    );
    ends[slot++] = length;
    const tail =
      `,"secretPath":${once(v.path)},"secretValueHidden":false,"skipMultilineEncoding":${v.skipMultilineEncoding ? 'true' : 'false'},` +
      `"tags":${v.tags === undefined || v.tags.length === 0 ? '[]' : JSON.stringify(v.tags)},"secretMetadata":[],` +
      `"createdAt":${isoLiteral(v.createdAt)},"updatedAt":${isoLiteral(v.updatedAt)}}`;
    if (hasComment[i]) {
      put(',"secretComment":');
      ends[slot++] = length;
      put(tail);
    } else {
      put(`,"secretComment":""${tail}`);
    }
    if ((i + 1) % ROWS_PER_PIECE === 0) {
      pieces.push(rows.join(''));
      rows = [];
    }
  }
  put('],"imports":[]}');
  ends[slot] = length;
  pieces.push(rows.join(''));
  return { text: pieces.length === 1 ? pieces[0]! : pieces.join(''), ends };
}
const ROWS_PER_PIECE = 256;

// Printable ASCII but the quote and the backslash: a JSON string literal of such text is
// the text in quotes (ids, most keys); anything else goes through JSON.stringify.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const literal = (text: string) => (PLAIN.test(text) ? `"${text}"` : JSON.stringify(text));
const isoLiteral = (d: Date) => `"${iso(d)}"`;

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
