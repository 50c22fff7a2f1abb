// Reading and writing secrets. Reads are the operator's hot path: ids and ciphertext
// come from caches, and every value a response holds is opened in ONE crypto task
// (plus, when references are expanded, one per round of references the opened values
// name and the response does not already hold). Writes go through the write pipeline.
import { randomUUID } from 'node:crypto';
import type { Crypto, FixedText } from '../../crypto/index.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { SecretImportRow } from '../../storage/secretImports.js';
import type { TagRow } from '../../storage/secretTags.js';
import { LIST_PART_ROWS, type CipherRowPart, type SecretCipherRow } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import { auditActor, isUuid, maySecrets, mayReadSecrets, requireSecrets, requireSecretsWrite, unrestrictedFor, type AccessControl, type Actor, type ProjectAccess, type ProjectRef, type SecretAction, type SystemActor } from './access.js';
import { topics, type FolderSnapshot } from './caches.js';
import { normaliseSecretPath } from './paths.js';
import type { AuditEntry, Change, Origin, WritePipeline } from './pipeline.js';
import { expandReferences, targetId, type ReferenceTarget } from './references.js';
import { answerTags, noneMatch, type AnswerDeps } from './answerTags.js';
import { currentRow, versionRow, openSealed, packedItems, renderSealed, renderSealedParts, sealMany, sealVersion, sealedItems, secretAad, valuesAndComments, type RenderedSealed } from './sealed.js';
import { folderNotFound, type FolderSnapshots } from './snapshots.js';
import { tagRef, tagsForWrite, type TagRef } from './tags.js';
import { CONTROL_CHARACTER, LONE_SURROGATE } from './text.js';

export { secretAad } from './sealed.js';

export const HIDDEN_VALUE = '<hidden-by-infisical>';

export interface SecretView {
  id: string;
  projectId: string;
  environment: string;
  version: number;
  key: string;
  value: string;
  comment: string;
  path: string;
  valueHidden: boolean;
  skipMultilineEncoding: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** The tags it carries (absent: none). */
  tags?: TagRef[];
}

export interface ReadQuery {
  project: ProjectRef;
  environment: string;
  secretPath?: string;
  expandSecretReferences?: boolean;
  viewSecretValue?: boolean;
  /** Single reads: a key absent from the folder is looked up in its imports (the last import holding it wins). */
  includeImports?: boolean;
  /** Records what the answer is built from, for its entity tag (answerTags.ts). */
  deps?: AnswerDeps;
}

/** A folder's imports, in position order (secretImports.ts, cached). */
export interface ImportSource {
  ofFolder(env: EnvironmentRow, folderId: string): Promise<SecretImportRow[]>;
}

/** One import as a list with include_imports answers it: the source's secrets, then those of its own imports. */
export interface ImportedFolder {
  secretPath: string;
  environment: string;
  folderId: string;
  secrets: SecretView[];
}

/** How deep imports of imports are followed (Infisical's bound). */
export const MAX_IMPORT_DEPTH = 10;

/** An imported secret's row, and the folder it lives in. */
interface ImportedRow {
  row: SecretCipherRow;
  env: EnvironmentRow;
  path: string;
  tagIds?: string[];
}

const KEY_NAME = /^[^:/\s][^:/]{0,254}$/;

export function validateSecretName(raw: string): string {
  const key = raw.trim();
  if (!KEY_NAME.test(key) || CONTROL_CHARACTER.test(key) || LONE_SURROGATE.test(key)) {
    throw new AppError('VALIDATION', 'Secret name must be 1 to 255 characters without ":" or "/"');
  }
  return key;
}

/**
 * Values and comments are sealed as UTF-8: a lone surrogate (JSON allows "\ud800") would
 * silently become U+FFFD, so the value read back would differ from the one written.
 */
export function validateSecretText(what: 'secretValue' | 'secretComment', s: string | undefined): void {
  if (s !== undefined && LONE_SURROGATE.test(s)) throw new AppError('VALIDATION', `${what} must be valid Unicode text (it holds a lone surrogate)`);
}

/** Audit metadata of a change that went through only because the caller overrode "never changes". */
export const IMMUTABLE_OVERRIDE = { immutableOverride: true } as const;

/**
 * `details` of a 409 that a repeated request with one more flag would get past: clients
 * (the admin UI) ask the person once more instead of parsing the message.
 */
export const REQUIRES_FORCE = { details: { requires: 'force' } } as const;
export const REQUIRES_OVERRIDE = { details: { requires: 'overrideImmutable' } } as const;

/** Most secrets one batch request may create. */
export const MAX_BATCH = 1000;

/**
 * The refusal of a reference into a scope the caller cannot read, as Infisical refuses it
 * (403), checked before any look-up. It does not name the target: a reference is part of
 * a secret value, and values never reach error messages.
 */
export const referenceForbidden = () =>
  new AppError('FORBIDDEN', 'You are attempting to reference secrets from an environment or path which you do not have access to');

export const secretNotFound = (name: string) => new AppError('NOT_FOUND', `Secret with name '${name}' not found`);

/** The folder at `path`, looked up (and held against a rename or delete) inside a write's transaction. */
export async function folderForWrite(s: Pick<TxStores, 'folders'>, env: EnvironmentRow, path: string) {
  const folder = await s.folders.byPathForWrite(env.id, path);
  if (!folder) throw folderNotFound(path, env);
  return folder;
}

/**
 * The end of every write to one secret, in its transaction: the folder's version moves
 * (cached snapshots of it are stale), one audit entry names the secret (never its value),
 * and every replica drops the environment's cached folders once the change commits.
 */
export async function secretWritten(
  c: { s: Pick<TxStores, 'folders'>; audit: Change['audit']; invalidate: Change['invalidate'] },
  at: { project: ProjectRecord; env: EnvironmentRow; path: string; folderId: string },
  entry: { eventType: string; secretKey: string; secretVersion: number; metadata?: AuditEntry['metadata'] },
) {
  await c.s.folders.bumpVersion(at.folderId);
  await c.audit({
    eventType: entry.eventType,
    projectId: at.project.id,
    environment: at.env.slug,
    secretPath: at.path,
    secretKey: entry.secretKey,
    secretVersion: entry.secretVersion,
    ...(entry.metadata ? { metadata: entry.metadata } : {}),
  });
  c.invalidate(topics.environment, at.env.id);
}

/** The secret `key` of the folder at `path`, locked for the rest of the transaction (404 when absent). */
async function lockSecret(s: Pick<TxStores, 'folders' | 'secrets'>, env: EnvironmentRow, path: string, key: string) {
  const folder = await folderForWrite(s, env, path);
  const cur = await s.secrets.byKeyForUpdate(folder.id, key);
  if (!cur) throw secretNotFound(key);
  return { folder, cur };
}

export function secretView(project: ProjectRecord, env: EnvironmentRow, r: SecretCipherRow, path: string, value: string | null, comment: string): SecretView {
  return {
    id: r.id,
    projectId: project.id,
    environment: env.slug,
    version: r.version,
    key: r.key,
    value: value ?? HIDDEN_VALUE,
    comment,
    path,
    valueHidden: value === null,
    skipMultilineEncoding: r.skipMultilineEncoding,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/**
 * THE rule of every answer that names secrets, reads and writes alike: it carries their
 * values only when the caller may read values at that environment and path; otherwise
 * each value is the hidden placeholder (`secretValueHidden: true`), and nothing is
 * decrypted for it.
 */
export const answersValues = (scope: ProjectAccess, env: Pick<EnvironmentRow, 'slug'>, path: string): boolean => mayReadSecrets(scope, env.slug, path);

/**
 * A secret as a write answers it: `value` only under answersValues (a write's caller may
 * hold `create`, `edit` or `delete` without `readValue`). `value` null: not opened.
 */
export function writtenView(
  scope: ProjectAccess,
  project: ProjectRecord,
  env: EnvironmentRow,
  r: SecretCipherRow,
  path: string,
  value: string | null,
  comment: string,
): SecretView {
  return secretView(project, env, r, path, answersValues(scope, env, path) ? value : null, comment);
}

/** The blobs of current secret rows (value unless `withValues` is false, and comment). */
export const rowItems = (project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) =>
  sealedItems(project.id, env.id, rows, (r) => r.id, (r) => currentRow(r.id), withValues);

/**
 * The fixed text of a list's answer around its sealed parts: for each row in order, a
 * slot for its value, then one for its comment when the row has one (`hasComment`);
 * as many segments as slots + 1, joined (a folder's template is kept as one flat string,
 * not thousands of small ones). `views` carry every field but the value and the comment
 * (empty strings there).
 */
export type { FixedText };
export type ListShaper = (views: readonly SecretView[], hasComment: readonly boolean[]) => FixedText;

/** A folder version's shaped answer: its segments and the serial that names it in the workers' cache. */
interface ListTemplate {
  projectId: string;
  environment: string;
  shaper: ListShaper;
  /** Shaped on first use, by `shape` (while the first render's worker opens the values), then kept. */
  segments: FixedText | undefined;
  shape: () => FixedText;
  /** The worker cache's keys of this answer: with references expanded, and raw. */
  keys: { expanded: string; raw: string };
  /** Cache keys already rendered once (later reads ask the worker's cache first). */
  rendered: Set<string>;
}

/** Prefix of every rendered-list cache key of an environment: what its invalidation drops. */
export const renderedListPrefix = (environmentId: string) => `list:${environmentId}:`;

export interface SecretsDeps {
  store: { secrets: Pick<Store['secrets'], 'version' | 'locate'> };
  /** `render` / `rendered`: without them (small test fakes) listRendered answers undefined. */
  crypto: Pick<Crypto, 'openMany' | 'sealMany'> & Partial<Pick<Crypto, 'render' | 'rendered'>>;
  access: Pick<AccessControl, 'authorize' | 'environment'>;
  snapshots: FolderSnapshots;
  changes: Pick<WritePipeline, 'inProject'>;
  /** Secret imports; without it, a folder imports nothing. */
  imports?: ImportSource;
  /** The project's tags (cached); without it, secrets are answered without tags. */
  tags?: { of(project: ProjectRecord): Promise<TagRow[]> };
  /** Called when a read shares a decryption task already under way (metrics). */
  onCoalescedRead?: () => void;
}

/** What every secret write names: where, and the request it came from. */
interface Where {
  project: ProjectRef;
  environment: string;
  secretPath?: string;
  origin?: Origin;
}

export interface NewSecret extends Where {
  key: string;
  /** The project tags it carries. */
  tagIds?: readonly string[];
  value: string;
  comment?: string;
  skipMultilineEncoding?: boolean;
  /** Marks a key that must never change (e.g. IDP_SECRET_KEY): updates then need an explicit override. */
  immutable?: boolean;
}

export interface SecretChange extends Where {
  key: string;
  /** Replaces the tags it carries (absent: unchanged). */
  tagIds?: readonly string[];
  value?: string;
  comment?: string;
  newKey?: string;
  skipMultilineEncoding?: boolean;
  allowImmutableChange?: boolean;
}

/** The text a version seals: a value (and comment) that round-trips through UTF-8. */
function validateTexts(value: string | undefined, comment: string | undefined) {
  validateSecretText('secretValue', value);
  validateSecretText('secretComment', comment);
}

/** The tags a secret carries now, inside a write's transaction. */
async function currentTags(s: Pick<TxStores, 'secretTags'>, project: ProjectRecord, secretId: string): Promise<TagRow[]> {
  const ids = (await s.secretTags.linksOf([secretId])).get(secretId) ?? [];
  if (ids.length === 0) return [];
  return (await s.secretTags.ofProject(project.id)).filter((t) => ids.includes(t.id));
}

/** Do two sets of tags hold the same tags? */
const sameIds = (a: readonly TagRow[], b: readonly TagRow[]) => a.length === b.length && a.every((t) => b.some((u) => u.id === t.id));

function withTagRows(v: SecretView, tags: readonly TagRow[]): SecretView {
  if (tags.length > 0) v.tags = tags.map(tagRef).sort((a, b) => a.slug.localeCompare(b.slug));
  return v;
}

export function secretsDomain(deps: SecretsDeps) {
  const { store, crypto, access, snapshots, changes } = deps;
  const entityTags = answerTags({ snapshots, imports: deps.imports, tags: deps.tags });
  // Concurrent reads of the same folder version share one decryption task.
  const opening = new Map<FolderSnapshot, Promise<string[]>>();
  // Rendered lists: the template of each folder version (a snapshot is never changed:
  // a change loads a new one), and the renders under way by cache key.
  const templates = new WeakMap<FolderSnapshot, ListTemplate>();
  // Whether a snapshot's list can be rendered in a worker (see listRendered), known once
  // per snapshot rather than looked for on every read.
  const renderable = new WeakMap<FolderSnapshot, boolean>();
  function isRenderable(snap: FolderSnapshot): boolean {
    let yes = renderable.get(snap);
    if (yes === undefined) {
      // Tags are read per request: list() answers a folder with tagged secrets.
      const tagged = snap.tagIds !== undefined && [...snap.tagIds.values()].some((ids) => ids.length > 0);
      // Rendered under one data key: while an online re-key runs, a folder under two is answered by list().
      const first = snap.rows[0];
      yes = !tagged && !(first !== undefined && snap.rows.some((r) => r.dataKeyId !== first.dataKeyId));
      renderable.set(snap, yes);
    }
    return yes;
  }
  const rendering = new Map<string, Promise<RenderedSealed>>();
  let serials = 0;

  /** `serial`: the one its cache keys were made with already (renderWhileReading). */
  function templateOf(project: ProjectRecord, env: EnvironmentRow, snap: FolderSnapshot, shaper: ListShaper, serial = ++serials): ListTemplate {
    const known = templates.get(snap);
    // The project and environment come from other caches than the snapshot: a renamed
    // environment is another template (and another cache key).
    if (known !== undefined && known.projectId === project.id && known.environment === env.slug && known.shaper === shaper) return known;
    const shape = () => {
      if (t.segments === undefined) {
        const pathOf = new Map(snap.folders.map((f) => [f.id, f.path]));
        const views = snap.rows.map((r) => secretView(project, env, r, pathOf.get(r.folderId)!, '', ''));
        t.segments = shaper(views, snap.rows.map((r) => r.commentBlob !== null));
      }
      return t.segments;
    };
    const keys = listKeys(env, serial);
    const t: ListTemplate = { projectId: project.id, environment: env.slug, shaper, segments: undefined, shape, keys, rendered: new Set() };
    templates.set(snap, t);
    return t;
  }

  const listKeys = (env: EnvironmentRow, serial: number) => {
    const prefix = renderedListPrefix(env.id);
    return { expanded: `${prefix}${serial}:x`, raw: `${prefix}${serial}:r` };
  };

  /**
   * A large folder's first read renders while it reads: the rows go to a worker in parts
   * as the database returns them (renderSealedParts), under a cache key of the template
   * the snapshot they become will have. Only a folder whose first part is full (more
   * follow): the render holds its worker until the last part, which a small folder's
   * read would make it wait for with nothing to open. Only rows under the project's
   * current data key; anything else (another key, tags, a read the store retried, a
   * template made meanwhile) abandons it, and the read renders the snapshot as before.
   */
  function renderWhileReading(renderer: Pick<Crypto, 'render'>, project: ProjectRecord, env: EnvironmentRow, shaper: ListShaper, expand: boolean) {
    let started: { serial: number; key: string; render: ReturnType<typeof renderSealedParts<SecretCipherRow>> } | undefined;
    let t: ListTemplate | undefined;
    let broken = false;
    const fed: CipherRowPart[] = [];
    const abandon = () => {
      broken = true;
      started?.render.abandon();
    };
    return {
      onRows(part: CipherRowPart): void {
        if (broken) return;
        if (!part.every((r) => r.dataKeyId === project.dataKeyId) || (!started && part.length < LIST_PART_ROWS)) return abandon();
        if (!started) {
          const serial = ++serials;
          const keys = listKeys(env, serial);
          const key = expand ? keys.expanded : keys.raw;
          const dataKey = { id: project.dataKeyId, wrapped: project.wrappedDataKey };
          const render = renderSealedParts<SecretCipherRow>(renderer, project, env.id, dataKey, key, (r) => r.id, (r) => currentRow(r.id), () => t!.shape(), {
            refuseIf: expand ? '${' : undefined,
          });
          started = { serial, key, render };
        }
        fed.push(part);
        // Their wrapped keys are read after the last part: the render is under the project's.
        started.render.push(part as readonly SecretCipherRow[]);
      },
      /** The render under way, when it answers for `snap` (the rows fed are its rows, in order); else abandoned. */
      finish(snap: FolderSnapshot, templated: boolean): { key: string; result: Promise<RenderedSealed> } | undefined {
        if (!started || broken) return undefined;
        let i = 0;
        const same = fed.every((part) => part.every((r) => r === snap.rows[i++])) && i === snap.rows.length;
        if (!same || !isRenderable(snap) || templated) return void abandon();
        t = templateOf(project, env, snap, shaper, started.serial);
        t.rendered.add(started.key);
        started.render.end();
        return { key: started.key, result: started.render.result };
      },
      abandon,
    };
  }

  /** Opens comments, and values unless `withValues` is false, of `rows` in one task. */
  async function open(project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) {
    const plain = await openSealed(crypto, project, rowItems(project, env, rows, withValues));
    return valuesAndComments(rows, plain, withValues);
  }

  function openSnapshot(project: ProjectRecord, env: EnvironmentRow, snap: FolderSnapshot): Promise<string[]> {
    let p = opening.get(snap);
    if (p) deps.onCoalescedRead?.();
    if (!p) {
      p = openSealed(crypto, project, rowItems(project, env, snap.rows));
      opening.set(snap, p);
      const forget = () => opening.delete(snap);
      p.then(forget, forget);
    }
    return p;
  }

  /**
   * Raw values of the referenced secrets (any folder or environment of the project),
   * opened in one task; only the values, and only of the targets asked for. A target
   * that does not exist (environment, folder or key) or cannot be named (an invalid
   * path) stays unexpanded, as in Infisical; any other failure (database, cache, crypto)
   * fails the request: an unexpanded reference must never stand in for a fault.
   */
  async function resolveTargets(project: ProjectRecord, scope: ProjectAccess, targets: ReferenceTarget[], d?: AnswerDeps): Promise<Map<string, string>> {
    d?.environments(project);
    const found: { target: ReferenceTarget; row: SecretCipherRow; env: EnvironmentRow }[] = [];
    for (const t of targets) {
      let path: string;
      try {
        path = normaliseSecretPath(t.path);
      } catch (err) {
        if (err instanceof AppError && err.code === 'VALIDATION') continue;
        throw err;
      }
      // Checked before anything is looked up: the refusal is the same whether or not the
      // target exists, and names only what the caller's own value names.
      if (!mayReadSecrets(scope, t.environment, path)) throw referenceForbidden();
      const env = project.environments.find((e) => e.slug === t.environment);
      if (!env) continue;
      let snap: FolderSnapshot;
      try {
        snap = await snapshots.get(env, path, false);
      } catch (err) {
        if (err instanceof AppError && (err.code === 'SECRET_PATH_NOT_FOUND' || err.code === 'VALIDATION')) {
          if (err.code === 'SECRET_PATH_NOT_FOUND') d?.folder(env, path, false, null);
          continue;
        }
        throw err;
      }
      d?.folder(env, path, false, snap);
      const row = snap.rows.find((r) => r.key === t.key);
      if (row) found.push({ target: t, row, env });
    }
    const out = new Map<string, string>();
    const items = found.flatMap(({ row, env }) =>
      sealedItems(project.id, env.id, [{ ...row, commentBlob: null }], (r) => r.id, (r) => currentRow(r.id)),
    );
    const values = await openSealed(crypto, project, items);
    found.forEach((f, i) => out.set(targetId(f.target), values[i]!));
    return out;
  }

  /**
   * Expands references in `views` in place. `opened`: raw values this request already
   * holds (they are not opened again); everything else referenced is opened by
   * resolveTargets, one task per round.
   */
  async function expand(project: ProjectRecord, scope: ProjectAccess, all: SecretView[], opened: SecretView[], d?: AnswerDeps) {
    // A hidden value is not expanded (and does not stand for its secret's value).
    const views = all.filter((v) => !v.valueHidden);
    if (!views.some((v) => v.value.includes('${'))) return;
    const known = new Map<string, string>();
    for (const s of opened) if (!s.valueHidden) known.set(targetId({ environment: s.environment, path: s.path, key: s.key }), s.value);
    const expanded = await expandReferences(
      views.map((v) => ({ value: v.value, environment: v.environment, path: v.path })),
      known,
      (targets) => resolveTargets(project, scope, targets, d),
    );
    views.forEach((v, i) => (v.value = expanded[i]!));
  }

  /**
   * A list for a caller whose role is not allowed everything everywhere: only the folders
   * it may describe are listed (their rows are neither returned nor counted), values only
   * where it may read them (elsewhere hidden, and never decrypted).
   */
  async function scopedList(
    project: ProjectRecord,
    scope: ProjectAccess,
    env: EnvironmentRow,
    snap: FolderSnapshot,
    pathOf: Map<string, string>,
    q: ReadQuery,
  ): Promise<SecretView[]> {
    const may = new Map(snap.folders.map((f) => [f.id, { describe: maySecrets(scope, 'describe', env.slug, f.path), value: q.viewSecretValue !== false && answersValues(scope, env, f.path) }]));
    const rows = snap.rows.filter((r) => may.get(r.folderId)!.describe);
    const withValue = rows.filter((r) => may.get(r.folderId)!.value);
    const without = rows.filter((r) => !may.get(r.folderId)!.value);
    const [a, b] = await Promise.all([open(project, env, withValue, true), open(project, env, without, false)]);
    const opened = new Map<string, { value: string | null; comment: string }>();
    withValue.forEach((r, i) => opened.set(r.id, { value: a.values[i]!, comment: a.comments[i]! }));
    without.forEach((r, i) => opened.set(r.id, { value: null, comment: b.comments[i]! }));
    const views = rows.map((r) => {
      const o = opened.get(r.id)!;
      return secretView(project, env, r, pathOf.get(r.folderId)!, o.value, o.comment);
    });
    if (q.viewSecretValue !== false && q.expandSecretReferences) await expand(project, scope, views, views, q.deps);
    return views;
  }

  /**
   * The folders `folderId` imports, in position order, as Infisical answers them: each
   * import holds its source's secrets, then those of the source's own imports (followed
   * MAX_IMPORT_DEPTH deep, each folder once, so a cycle made by a later rename ends).
   * An import whose source the grant may not read, or that no longer exists (a folder
   * renamed or deleted), is left out.
   */
  async function gatherImports(scope: ProjectAccess, project: ProjectRecord, env: EnvironmentRow, path: string, folderId: string, d?: AnswerDeps) {
    if (!deps.imports) return [];
    const importSource = deps.imports;
    d?.environments(project);
    const importsOf = async (e: EnvironmentRow, id: string) => {
      const rows = await importSource.ofFolder(e, id);
      d?.importList(e, id, rows);
      return rows;
    };
    const seen = new Set<string>([`${env.id}\u0000${path}`]);
    /** The readable, existing sources among `imports`, each once. */
    const sources = async (imports: readonly SecretImportRow[]) => {
      const out: { env: EnvironmentRow; path: string; folderId: string; rows: SecretCipherRow[]; tagIds?: Map<string, string[]> }[] = [];
      for (const imp of imports) {
        const srcEnv = project.environments.find((e) => e.id === imp.importEnvId);
        const key = `${imp.importEnvId}\u0000${imp.importPath}`;
        if (!srcEnv || seen.has(key) || !mayReadSecrets(scope, srcEnv.slug, imp.importPath)) continue;
        seen.add(key);
        let snap: FolderSnapshot;
        try {
          snap = await snapshots.get(srcEnv, imp.importPath, false);
        } catch (err) {
          if (err instanceof AppError && err.code === 'SECRET_PATH_NOT_FOUND') {
            d?.folder(srcEnv, imp.importPath, false, null);
            continue;
          }
          throw err;
        }
        d?.folder(srcEnv, imp.importPath, false, snap);
        out.push({ env: srcEnv, path: imp.importPath, folderId: snap.folders[0]!.id, rows: snap.rows, tagIds: snap.tagIds });
      }
      return out;
    };
    const top = await sources(await importsOf(env, folderId));
    const groups: { secretPath: string; environment: EnvironmentRow; folderId: string; rows: ImportedRow[] }[] = [];
    for (const t of top) {
      const rows: ImportedRow[] = t.rows.map((row) => ({ row, env: t.env, path: t.path, tagIds: t.tagIds?.get(row.id) }));
      let frontier = [t];
      for (let depth = 1; depth < MAX_IMPORT_DEPTH && frontier.length > 0; depth++) {
        const next = [];
        for (const f of frontier) next.push(...(await sources(await importsOf(f.env, f.folderId))));
        for (const n of next) rows.push(...n.rows.map((row) => ({ row, env: n.env, path: n.path, tagIds: n.tagIds?.get(row.id) })));
        frontier = next;
      }
      // One secret per key in an import: the source's own before its imports'.
      const keys = new Set<string>();
      groups.push({ secretPath: t.path, environment: t.env, folderId: t.folderId, rows: rows.filter((r) => !keys.has(r.row.key) && keys.add(r.row.key)) });
    }
    return groups;
  }

  /** Sets the tags of `views` from their tag ids (a tag deleted meanwhile is left out). */
  async function attachTags(project: ProjectRecord, views: SecretView[], idsOf: (v: SecretView, i: number) => readonly string[] | undefined, d?: AnswerDeps) {
    if (!deps.tags || !views.some((v, i) => (idsOf(v, i)?.length ?? 0) > 0)) return;
    const tags = await deps.tags.of(project);
    d?.tagsShown(tags);
    const byId = new Map(tags.map((t) => [t.id, t]));
    views.forEach((v, i) => {
      const ids = idsOf(v, i);
      if (ids?.length) v.tags = ids.flatMap((id) => (byId.has(id) ? [tagRef(byId.get(id)!)] : [])).sort((a, b) => a.slug.localeCompare(b.slug));
    });
  }

  /**
   * A write's grant, environment and normalised path: 404 / 403 first, then the path's
   * 422; `reveal`: whether its answer may carry values (answersValues).
   */
  async function writeTo(actor: Actor | SystemActor, w: Where, action: SecretAction) {
    const grant = await changes.inProject(actor, w.project, 'secrets:write', w.origin);
    const env = access.environment(grant.project, w.environment);
    const path = normaliseSecretPath(w.secretPath);
    requireSecretsWrite(grant.access, action, env.slug, path);
    return { grant, project: grant.project, env, path, reveal: answersValues(grant.access, env, path) };
  }

  /** One secret's creation inside a change's transaction (create, and an upserted batch item). */
  async function createIn(
    tx: Pick<Change, 's' | 'audit' | 'invalidate'>,
    actor: Actor | SystemActor,
    where: { project: ProjectRecord; env: EnvironmentRow; path: string },
    input: Omit<NewSecret, keyof Where>,
  ): Promise<{ inserted: SecretCipherRow; tags: TagRow[] }> {
    const { s, audit, invalidate } = tx;
    const { project, env, path } = where;
    const key = validateSecretName(input.key);
    validateTexts(input.value, input.comment);
    const id = randomUUID();
    const folder = await folderForWrite(s, env, path);
    if (await s.secrets.byKey(folder.id, key)) throw new AppError('BAD_REQUEST', 'Secret already exists');
    const tags = input.tagIds ? await tagsForWrite(s, project, input.tagIds) : [];
    const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: id, key, version: 1 };
    const { valueBlob, commentBlob, dataKeyId } = await sealVersion(crypto, s, project, at, input.value, input.comment);
    const inserted = await s.secrets.insert({
      id,
      dataKeyId,
      folderId: folder.id,
      key,
      valueBlob,
      commentBlob,
      skipMultilineEncoding: input.skipMultilineEncoding,
      immutable: input.immutable,
      ...auditActor(actor),
    });
    if (tags.length > 0) await s.secretTags.setLinks(id, tags.map((t) => t.id));
    await secretWritten({ s, audit, invalidate }, { project, env, path, folderId: folder.id }, {
      eventType: 'create-secret',
      secretKey: key,
      secretVersion: 1,
      metadata: tags.length > 0 ? { tags: tags.map((t) => t.slug).join(',') } : undefined,
    });
    return { inserted, tags };
  }

  /** One secret's deletion inside a change's transaction (remove, and each item of a batch delete). */
  async function removeIn(
    tx: Pick<Change, 's' | 'audit' | 'invalidate'>,
    where: { project: ProjectRecord; env: EnvironmentRow; path: string; reveal: boolean },
    key: string,
    allowImmutableChange: boolean | undefined,
  ): Promise<{ row: SecretCipherRow; value: string | null; comment: string; tags: TagRow[] }> {
    const { s, audit, invalidate } = tx;
    const { project, env, path, reveal } = where;
    const { folder, cur } = await lockSecret(s, env, path, key);
    if (cur.immutable && !allowImmutableChange) {
      throw new AppError('CONFLICT', `Secret '${key}' must never change; an explicit override is required to delete it`, REQUIRES_OVERRIDE);
    }
    const { values, comments } = await open(project, env, [cur], reveal);
    const tags = await currentTags(s, project, cur.id);
    await s.secrets.remove(cur.id);
    await secretWritten({ s, audit, invalidate }, { project, env, path, folderId: folder.id }, {
      eventType: 'delete-secret',
      secretKey: key,
      secretVersion: cur.version,
      metadata: cur.immutable ? IMMUTABLE_OVERRIDE : undefined,
    });
    return { row: cur, value: reveal ? values[0]! : null, comment: comments[0]!, tags };
  }

  /**
   * One secret's change inside a change's transaction (update, and each item of a batch
   * change): a new version with what changed, or nothing at all when nothing does.
   */
  async function changeIn(
    tx: Pick<Change, 's' | 'audit' | 'invalidate'>,
    actor: Actor | SystemActor,
    where: { project: ProjectRecord; env: EnvironmentRow; path: string; reveal: boolean },
    input: Omit<SecretChange, keyof Where>,
  ): Promise<{ row: SecretCipherRow; value: string | null; comment: string; tags: TagRow[] }> {
    const { s, audit, invalidate } = tx;
    const { project, env, path, reveal } = where;
    const key = validateSecretName(input.key);
    const newKey = input.newKey === undefined ? key : validateSecretName(input.newKey);
    validateTexts(input.value, input.comment);
    const { folder, cur } = await lockSecret(s, env, path, key);
    const tags = input.tagIds ? await tagsForWrite(s, project, input.tagIds) : await currentTags(s, project, cur.id);
    // The current value is opened only to be sealed again into the new version, or to be
    // compared (and answered) for a caller who may read it; never for anyone else's answer.
    const withValue = input.value === undefined || reveal;
    const opened = await open(project, env, [cur], withValue);
    const curValue = withValue ? opened.values[0]! : null;
    const curComment = opened.comments[0]!;
    const valueChanges = input.value !== undefined && !(reveal && input.value === curValue);
    const unchanged =
      !valueChanges &&
      newKey === key &&
      (input.comment === undefined || input.comment === curComment) &&
      (input.skipMultilineEncoding === undefined || input.skipMultilineEncoding === cur.skipMultilineEncoding) &&
      (input.tagIds === undefined || sameIds(tags, await currentTags(s, project, cur.id)));
    if (unchanged) return { row: cur, value: curValue, comment: curComment, tags };
    const overridden = cur.immutable && (valueChanges || newKey !== key);
    if (overridden && !input.allowImmutableChange) {
      throw new AppError('CONFLICT', `Secret '${key}' must never change; an explicit override is required to change it`, REQUIRES_OVERRIDE);
    }
    if (newKey !== key && (await s.secrets.byKey(folder.id, newKey))) throw new AppError('BAD_REQUEST', 'Secret already exists');
    const value = input.value ?? curValue!;
    const comment = input.comment ?? curComment;
    const version = cur.version + 1;
    const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: cur.id, key: newKey, version };
    const { valueBlob, commentBlob, dataKeyId } = await sealVersion(crypto, s, project, at, value, comment);
    const row = await s.secrets.update({
      id: cur.id,
      dataKeyId,
      key: newKey,
      version,
      valueBlob,
      commentBlob,
      skipMultilineEncoding: input.skipMultilineEncoding,
      ...auditActor(actor),
    });
    if (input.tagIds) await s.secretTags.setLinks(cur.id, tags.map((t) => t.id));
    await secretWritten({ s, audit, invalidate }, { project, env, path, folderId: folder.id }, {
      eventType: 'update-secret',
      secretKey: newKey,
      secretVersion: version,
      metadata: {
        ...(newKey !== key ? { renamedFrom: key } : {}),
        ...(overridden ? IMMUTABLE_OVERRIDE : {}),
        ...(input.tagIds ? { tags: tags.map((t) => t.slug).join(',') } : {}),
      },
    });
    return { row, value, comment, tags };
  }

  return {
    /** The entity tag of an answer to `request` (route, its parameters and query text) built with `d` recording. */
    entityTag(request: string, d: AnswerDeps): string {
      if (d.rules === undefined) throw new Error('an answer recorded no rules');
      return entityTags.tagOf(d.rules, request, d);
    },

    /**
     * Is `ifNoneMatch` still the tag of the last answer to `request` this replica built for
     * the caller's rules? The caller is authorised as for the read itself (404 / 403 first);
     * then only cached folder versions, import lists and tags are looked at: nothing is
     * opened. False when this replica built no such answer: the read then tells.
     */
    notModified(actor: Actor, q: Pick<ReadQuery, 'project' | 'environment' | 'secretPath'>, request: string, ifNoneMatch: string): boolean | Promise<boolean> {
      const check = (a: { project: ProjectRecord; access: ProjectAccess }) => {
        const env = access.environment(a.project, q.environment);
        requireSecrets(a.access, 'describe', env.slug, normaliseSecretPath(q.secretPath));
        const tag = entityTags.rememberedTag(a.project, a.access.rules, request);
        if (tag === undefined) return false;
        return tag instanceof Promise ? tag.then((t) => noneMatch(ifNoneMatch, t)) : noneMatch(ifNoneMatch, tag);
      };
      const authorized = access.authorize(actor, q.project, 'secrets:read');
      return authorized instanceof Promise ? authorized.then(check) : check(authorized);
    },

    async list(actor: Actor, q: ReadQuery & { recursive?: boolean }): Promise<SecretView[]> {
      const { project, access: scope } = await access.authorize(actor, q.project, 'secrets:read');
      const env = access.environment(project, q.environment);
      const path = normaliseSecretPath(q.secretPath);
      // Before the look-up: a folder outside the caller's scope answers the same whether or not it exists.
      requireSecrets(scope, 'describe', env.slug, path);
      const snap = await snapshots.get(env, path, q.recursive ?? false);
      q.deps?.answeredFor(scope.rules).folder(env, path, q.recursive ?? false, snap);
      const pathOf = new Map(snap.folders.map((f) => [f.id, f.path]));
      if (!unrestrictedFor(scope, 'describe', 'readValue')) {
        const scoped = await scopedList(project, scope, env, snap, pathOf, q);
        await attachTags(project, scoped, (v) => snap.tagIds?.get(v.id), q.deps);
        return scoped;
      }
      if (q.viewSecretValue === false) {
        // Nothing is decrypted that the response does not contain; comments are not secret values.
        const { comments } = await open(project, env, snap.rows, false);
        const hidden = snap.rows.map((r, i) => secretView(project, env, r, pathOf.get(r.folderId)!, null, comments[i]!));
        await attachTags(project, hidden, (v) => snap.tagIds?.get(v.id), q.deps);
        return hidden;
      }
      const { values, comments } = valuesAndComments(snap.rows, await openSnapshot(project, env, snap));
      const views = snap.rows.map((r, i) => secretView(project, env, r, pathOf.get(r.folderId)!, values[i]!, comments[i]!));
      if (q.expandSecretReferences) await expand(project, scope, views, views, q.deps);
      await attachTags(project, views, (v) => snap.tagIds?.get(v.id), q.deps);
      return views;
    },

    /**
     * The list's answer as finished bytes, rendered by a crypto worker from `shaper`'s
     * segments and the folder's sealed values (which so never become strings here), and
     * kept in the worker's cache under this folder version. Undefined when the answer needs
     * the values themselves (hidden values, or references to expand): use list().
     */
    async listRendered(actor: Actor, q: ReadQuery & { recursive?: boolean }, shaper: ListShaper, answerDeps: AnswerDeps | undefined = q.deps): Promise<Buffer | undefined> {
      if (q.viewSecretValue === false || crypto.render === undefined || crypto.rendered === undefined) return undefined;
      const renderer = crypto as Pick<Crypto, 'render' | 'rendered'>;
      // Held project and role: a value (the hot path).
      const authorized = access.authorize(actor, q.project, 'secrets:read');
      const { project, access: scope } = authorized instanceof Promise ? await authorized : authorized;
      const env = access.environment(project, q.environment);
      const path = normaliseSecretPath(q.secretPath);
      requireSecrets(scope, 'describe', env.slug, path);
      // A scoped role filters per folder, and tags are read per request: list() answers those.
      if (!unrestrictedFor(scope, 'describe', 'readValue')) return undefined;
      // A value holding a reference needs expanding: that answer is built the slow way.
      const expand = q.expandSecretReferences === true;
      const recursive = q.recursive ?? false;
      // Held: the hot path, no promise. Otherwise the rows may be read now (a miss), and
      // only then is the render-while-reading state made.
      let snap = snapshots.held(env, path, recursive);
      let early: ReturnType<ReturnType<typeof renderWhileReading>['finish']>;
      if (snap === undefined) {
        let reading: ReturnType<typeof renderWhileReading> | undefined;
        const onRows = (part: CipherRowPart) => (reading ??= renderWhileReading(renderer, project, env, shaper, expand)).onRows(part);
        try {
          snap = await snapshots.get(env, path, recursive, onRows);
        } catch (err) {
          reading?.abandon();
          throw err;
        }
        early = reading?.finish(snap, templates.has(snap));
      }
      if (early) {
        rendering.set(early.key, early.result);
        const forget = () => rendering.delete(early.key);
        early.result.then(forget, forget);
        const bytes = (await early.result).bytes;
        answerDeps?.answeredFor(scope.rules).folder(env, path, recursive, snap);
        return bytes;
      }
      if (!isRenderable(snap)) return undefined;
      const first = snap.rows[0];
      const t = templateOf(project, env, snap, shaper);
      const key = expand ? t.keys.expanded : t.keys.raw;
      let p = rendering.get(key);
      if (p) deps.onCoalescedRead?.();
      else {
        const cached = t.rendered.has(key);
        t.rendered.add(key);
        p = renderSealed(renderer, project, { id: first?.dataKeyId ?? '', wrapped: first?.wrappedKey ?? Buffer.alloc(0) }, key, t.segments ?? t.shape, () => packedItems(project.id, env.id, snap.rows, (r) => r.id, (r) => currentRow(r.id)), {
          refuseIf: expand ? '${' : undefined,
          cached,
        });
        rendering.set(key, p);
        const forget = () => rendering.delete(key);
        p.then(forget, forget);
      }
      const r = await p;
      answerDeps?.answeredFor(scope.rules).folder(env, path, recursive, snap);
      return r.bytes;
    },

    async get(actor: Actor, q: ReadQuery & { secretName: string; version?: number; type?: 'shared' | 'personal' }): Promise<SecretView> {
      const { project, access: scope } = await access.authorize(actor, q.project, 'secrets:read');
      const here = access.environment(project, q.environment);
      const herePath = normaliseSecretPath(q.secretPath);
      requireSecrets(scope, q.viewSecretValue === false ? 'describe' : 'readValue', here.slug, herePath);
      const snap = await snapshots.get(here, herePath, false);
      q.deps?.answeredFor(scope.rules).folder(here, herePath, false, snap);
      // Personal overrides are not supported: there is never a personal secret to return.
      if (q.type === 'personal') throw secretNotFound(q.secretName);
      let found: ImportedRow | undefined;
      const local = snap.rows.find((r) => r.key === q.secretName);
      if (local) found = { row: local, env: here, path: herePath, tagIds: snap.tagIds?.get(local.id) };
      else if (q.includeImports) {
        // As Infisical: the last import holding the key wins (only imports the caller may read).
        const groups = await gatherImports(scope, project, here, herePath, snap.folders[0]!.id, q.deps);
        for (let i = groups.length - 1; i >= 0 && !found; i--) found = groups[i]!.rows.find((r) => r.row.key === q.secretName);
      }
      if (!found) throw secretNotFound(q.secretName);
      const { row: current, env, path, tagIds } = found;
      const isCurrent = q.version === undefined || q.version === current.version;
      const reveal = q.viewSecretValue !== false;
      let v: SecretView;
      if (isCurrent) {
        const { values, comments } = await open(project, env, [current], reveal);
        v = secretView(project, env, current, path, reveal ? values[0]! : null, comments[0]!);
      } else {
        const old = await store.secrets.version(current.id, q.version!);
        if (!old) throw new AppError('NOT_FOUND', `Secret '${q.secretName}' has no version ${q.version}`);
        const row = { ...current, version: old.version, valueBlob: old.valueBlob, commentBlob: old.commentBlob, key: old.key, updatedAt: old.createdAt };
        const items = sealedItems(project.id, env.id, [old], (r) => r.secretId, (r) => versionRow(r.secretId, r.version), reveal);
        const { values, comments } = valuesAndComments([old], await openSealed(crypto, project, items), reveal);
        v = secretView(project, env, row, path, reveal ? values[0]! : null, comments[0]!);
      }
      if (reveal && q.expandSecretReferences) {
        // Only what the value names is opened (one task per round of references), never
        // the rest of the folder. The row itself is known already, unless an older
        // version was asked for (a reference to its key means the current one). An
        // imported secret's references are relative to the folder it lives in.
        await expand(project, scope, [v], isCurrent ? [v] : [], q.deps);
      }
      await attachTags(project, [v], () => tagIds, q.deps);
      return v;
    },

    /**
     * One secret by id (Terraform's import), under exactly the rules of get(): located,
     * then read by its environment, path and name. What the caller may not see answers as
     * an unknown id, naming nothing the id would reveal: not a member of its project (the
     * project's 404), or a place it may not describe. A caller who may describe it there
     * but not read values gets get()'s 403; viewSecretValue false asks describe only.
     */
    async getById(actor: Actor, q: { id: string; viewSecretValue?: boolean; expandSecretReferences?: boolean; deps?: AnswerDeps }): Promise<SecretView> {
      const idNotFound = () => new AppError('NOT_FOUND', `Secret with ID '${q.id.slice(0, 64)}' not found`);
      const loc = isUuid(q.id) ? await store.secrets.locate(q.id.toLowerCase()) : undefined;
      if (!loc) throw idNotFound();
      const seen = await Promise.resolve()
        .then(() => access.authorize(actor, { id: loc.projectId }, 'secrets:read'))
        .catch((err: unknown) => {
          // Not a member: the project's 404 would name the project.
          throw err instanceof AppError && err.code === 'NOT_FOUND' ? idNotFound() : err;
        });
      const env = seen.project.environments.find((e) => e.id === loc.environmentId);
      if (!env || !maySecrets(seen.access, 'describe', env.slug, loc.folderPath)) throw idNotFound();
      // Deleted, or its folder deleted, meanwhile: the id names nothing any more.
      const gone = (err: unknown) => {
        throw err instanceof AppError && (err.code === 'NOT_FOUND' || err.code === 'SECRET_PATH_NOT_FOUND') ? idNotFound() : err;
      };
      const row = (await Promise.resolve(snapshots.get(env, loc.folderPath, false)).catch(gone)).rows.find((r) => r.id === loc.id);
      if (!row) throw idNotFound();
      const v = await this.get(actor, {
        project: { id: loc.projectId },
        environment: env.slug,
        secretPath: loc.folderPath,
        secretName: row.key,
        viewSecretValue: q.viewSecretValue,
        expandSecretReferences: q.expandSecretReferences,
        deps: q.deps,
      }).catch(gone);
      // A rename and a new secret under the old name meanwhile: not the one asked for.
      if (v.id !== loc.id) throw idNotFound();
      return v;
    },

    /**
     * The imports of the folder a list names (include_imports), each with its secrets:
     * every value opened in one task with the comments, references expanded relative to
     * the folder each secret lives in. Only imports whose source the caller may read.
     */
    async imports(actor: Actor, q: ReadQuery): Promise<ImportedFolder[]> {
      const { project, access: scope } = await access.authorize(actor, q.project, 'secrets:read');
      const env = access.environment(project, q.environment);
      const path = normaliseSecretPath(q.secretPath);
      requireSecrets(scope, 'describe', env.slug, path);
      const snap = await snapshots.get(env, path, false);
      q.deps?.answeredFor(scope.rules).folder(env, path, false, snap);
      const groups = await gatherImports(scope, project, env, path, snap.folders[0]!.id, q.deps);
      const all = groups.flatMap((g) => g.rows);
      if (all.length === 0) return groups.map((g) => ({ secretPath: g.secretPath, environment: g.environment.slug, folderId: g.folderId, secrets: [] }));
      const reveal = q.viewSecretValue !== false;
      const items = all.flatMap((r) => rowItems(project, r.env, [r.row], reveal));
      const { values, comments } = valuesAndComments(
        all.map((r) => r.row),
        await openSealed(crypto, project, items),
        reveal,
      );
      const views = all.map((r, i) => secretView(project, r.env, r.row, r.path, reveal ? values[i]! : null, comments[i]!));
      if (reveal && q.expandSecretReferences) await expand(project, scope, views, views, q.deps);
      await attachTags(project, views, (_v, n) => all[n]!.tagIds, q.deps);
      let i = 0;
      return groups.map((g) => ({
        secretPath: g.secretPath,
        environment: g.environment.slug,
        folderId: g.folderId,
        secrets: g.rows.map(() => views[i++]!),
      }));
    },

    async create(actor: Actor | SystemActor, input: NewSecret): Promise<SecretView> {
      const w = await writeTo(actor, input, 'create');
      validateSecretName(input.key);
      validateTexts(input.value, input.comment);
      const row = await w.grant.run((tx) => createIn(tx, actor, w, input));
      return withTagRows(writtenView(w.grant.access, w.project, w.env, row.inserted, w.path, input.value, input.comment ?? ''), row.tags);
    },

    /**
     * A new version with a new value, comment, name, tags and/or multiline flag; unchanged
     * parts are re-sealed for it. A change that changes nothing writes nothing (no version,
     * no audit entry) and answers the secret as it is. Whether a value sent equals the
     * current one is decided only for a caller who may read it: for anyone else, a value
     * sent is a change (else the version number would tell them whether they guessed it).
     */
    async update(actor: Actor | SystemActor, input: SecretChange): Promise<SecretView> {
      const w = await writeTo(actor, input, 'edit');
      validateSecretName(input.key);
      if (input.newKey !== undefined) validateSecretName(input.newKey);
      validateTexts(input.value, input.comment);
      const result = await w.grant.run((tx) => changeIn(tx, actor, w, input));
      return withTagRows(writtenView(w.grant.access, w.project, w.env, result.row, w.path, result.value, result.comment), result.tags);
    },

    /** Deletes the secret (and its versions); returns it as it was (its value only to a caller who may read it, as Infisical does). */
    async remove(actor: Actor | SystemActor, input: Where & { key: string; allowImmutableChange?: boolean }): Promise<SecretView> {
      const w = await writeTo(actor, input, 'delete');
      const key = validateSecretName(input.key);
      const result = await w.grant.run((tx) => removeIn(tx, w, key, input.allowImmutableChange));
      return withTagRows(writtenView(w.grant.access, w.project, w.env, result.row, w.path, result.value, result.comment), result.tags);
    },

    /**
     * Changes many secrets in one transaction, all or none (Infisical's batch PATCH). An
     * item may name its own folder (`secretPath`), checked for the caller as the batch's.
     * mode `upsert`: an item whose secret does not exist is created there (the caller needs
     * create there too, and the item a value); `failOnNotFound` (the default): 404.
     */
    async changeMany(
      actor: Actor | SystemActor,
      input: Where & { mode?: 'failOnNotFound' | 'upsert'; secrets: readonly (Omit<SecretChange, keyof Where> & { secretPath?: string })[] },
    ): Promise<SecretView[]> {
      const w = await writeTo(actor, input, 'edit');
      if (input.secrets.length === 0) throw new AppError('VALIDATION', 'secrets must hold at least one secret');
      if (input.secrets.length > MAX_BATCH) throw new AppError('VALIDATION', `secrets may hold at most ${MAX_BATCH} secrets`);
      const seen = new Set<string>();
      const items = input.secrets.map((x) => {
        const key = validateSecretName(x.key);
        if (x.newKey !== undefined) validateSecretName(x.newKey);
        validateTexts(x.value, x.comment);
        const path = x.secretPath === undefined ? w.path : normaliseSecretPath(x.secretPath);
        if (path !== w.path) requireSecretsWrite(w.grant.access, 'edit', w.env.slug, path);
        const place = `${path}\u0000${key}`;
        if (seen.has(place)) throw new AppError('BAD_REQUEST', `Secret '${key}' appears more than once in the batch`);
        seen.add(place);
        return { ...x, key, at: { ...w, path, reveal: path === w.path ? w.reveal : answersValues(w.grant.access, w.env, path) } };
      });
      const done = await w.grant.run(async (tx) => {
        const out: { at: (typeof items)[number]['at']; row: SecretCipherRow; value: string | null; comment: string; tags: TagRow[] }[] = [];
        for (const x of items) {
          const folder = await folderForWrite(tx.s, x.at.env, x.at.path);
          if (input.mode === 'upsert' && !(await tx.s.secrets.byKey(folder.id, x.key))) {
            requireSecretsWrite(w.grant.access, 'create', x.at.env.slug, x.at.path);
            if (x.value === undefined) throw new AppError('VALIDATION', `secretValue is required to create '${x.key}' (mode upsert)`);
            if (x.newKey !== undefined && x.newKey !== x.key) throw new AppError('VALIDATION', `newSecretName cannot rename '${x.key}': it does not exist yet (mode upsert creates it)`);
            const made = await createIn(tx, actor, x.at, { key: x.key, value: x.value, comment: x.comment, skipMultilineEncoding: x.skipMultilineEncoding, tagIds: x.tagIds });
            out.push({ at: x.at, row: made.inserted, value: x.value, comment: x.comment ?? '', tags: made.tags });
          } else {
            out.push({ at: x.at, ...(await changeIn(tx, actor, x.at, x)) });
          }
        }
        return out;
      });
      return done.map((r) => withTagRows(writtenView(w.grant.access, w.project, r.at.env, r.row, r.at.path, r.value, r.comment), r.tags));
    },

    /** Deletes many secrets of one folder in one transaction, all or none (Infisical's batch DELETE). */
    async removeMany(actor: Actor | SystemActor, input: Where & { keys: readonly string[]; allowImmutableChange?: boolean }): Promise<SecretView[]> {
      const w = await writeTo(actor, input, 'delete');
      if (input.keys.length === 0) throw new AppError('VALIDATION', 'secrets must hold at least one secret');
      if (input.keys.length > MAX_BATCH) throw new AppError('VALIDATION', `secrets may hold at most ${MAX_BATCH} secrets`);
      const keys = input.keys.map(validateSecretName);
      if (new Set(keys).size !== keys.length) throw new AppError('BAD_REQUEST', 'A secret appears more than once in the batch');
      const done = await w.grant.run(async (tx) => {
        const out = [];
        for (const key of keys) out.push(await removeIn(tx, w, key, input.allowImmutableChange));
        return out;
      });
      return done.map((r) => withTagRows(writtenView(w.grant.access, w.project, w.env, r.row, w.path, r.value, r.comment), r.tags));
    },

    /**
     * Marks an existing secret as never changing (the inventory declares it so, but it was
     * created before, e.g. in the UI). Its value and version stay; returns false when it
     * already was marked.
     */
    async protect(actor: Actor | SystemActor, input: Where & { key: string }): Promise<boolean> {
      const { grant, project, env, path } = await writeTo(actor, input, 'edit');
      const key = validateSecretName(input.key);
      return grant.run(async ({ s, audit, invalidate }) => {
        const { folder, cur } = await lockSecret(s, env, path, key);
        if (!(await s.secrets.markImmutable(cur.id))) return false;
        // Cached snapshots carry the flag: the folder's version moves with it.
        await secretWritten({ s, audit, invalidate }, { project, env, path, folderId: folder.id }, { eventType: 'protect-secret', secretKey: key, secretVersion: cur.version });
        return true;
      });
    },

    /**
     * Creates every secret of the batch or none: names are checked (within the batch and
     * against the folder) before anything is written, all blobs are sealed in one task,
     * and the rows and their audit entries commit in one transaction.
     */
    async createMany(
      actor: Actor | SystemActor,
      input: Where & { secrets: readonly { key: string; value: string; comment?: string; skipMultilineEncoding?: boolean; tagIds?: readonly string[] }[] },
    ): Promise<SecretView[]> {
      const { grant, project, env, path } = await writeTo(actor, input, 'create');
      if (input.secrets.length === 0) throw new AppError('VALIDATION', 'secrets must hold at least one secret');
      if (input.secrets.length > MAX_BATCH) throw new AppError('VALIDATION', `secrets may hold at most ${MAX_BATCH} secrets`);
      const items = input.secrets.map((x) => {
        validateTexts(x.value, x.comment);
        return { ...x, key: validateSecretName(x.key), id: randomUUID() };
      });
      const seen = new Set<string>();
      for (const x of items) {
        if (seen.has(x.key)) throw new AppError('BAD_REQUEST', `Secret '${x.key}' appears more than once in the batch`);
        seen.add(x.key);
      }
      const rows = await grant.run(async ({ s, auditMany, invalidate }) => {
        const folder = await folderForWrite(s, env, path);
        const existing = await s.secrets.byKeys(folder.id, [...seen]);
        if (existing.length > 0) {
          const names = existing.map((r) => r.key).sort();
          throw new AppError('BAD_REQUEST', `Secret already exists: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}`);
        }
        const tagsOf = new Map<string, TagRow[]>();
        for (const x of items) if (x.tagIds?.length) tagsOf.set(x.id, await tagsForWrite(s, project, x.tagIds));
        const plain: { plaintext: string; aad: string }[] = [];
        for (const x of items) {
          const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: x.id, key: x.key, version: 1 };
          plain.push({ plaintext: x.value, aad: secretAad('value', at) });
          if (x.comment) plain.push({ plaintext: x.comment, aad: secretAad('comment', at) });
        }
        const { blobs, dataKeyId } = await sealMany(crypto, s, project, plain);
        let i = 0;
        const toInsert = items.map((x) => ({
          id: x.id,
          folderId: folder.id,
          key: x.key,
          valueBlob: blobs[i++]!,
          commentBlob: x.comment ? blobs[i++]! : null,
          skipMultilineEncoding: x.skipMultilineEncoding,
        }));
        const inserted = await s.secrets.insertMany(toInsert, auditActor(actor), dataKeyId);
        for (const [secretId, tags] of tagsOf) await s.secretTags.setLinks(secretId, tags.map((t) => t.id));
        await s.folders.bumpVersion(folder.id);
        // One entry per secret, appended under one hold of the chain.
        await auditMany(
          items.map((x) => ({
            eventType: 'create-secret',
            projectId: project.id,
            environment: env.slug,
            secretPath: path,
            secretKey: x.key,
            secretVersion: 1,
            metadata: { batch: true },
          })),
        );
        invalidate(topics.environment, env.id);
        return { inserted, tagsOf };
      });
      return rows.inserted.map((r, n) => withTagRows(writtenView(grant.access, project, env, r, path, items[n]!.value, items[n]!.comment ?? ''), rows.tagsOf.get(r.id) ?? []));
    },
  };
}
export type SecretsDomain = ReturnType<typeof secretsDomain>;

