// Entity tags of secret reads (ETag / If-None-Match), computed from what an answer depends
// on, never from a value: the folders it was read from (their ids and versions), the
// import lists it followed, the project's tags when it shows any, the caller's rules and
// the request itself. A value's plaintext never enters the tag, so a tag cannot be used to
// test a guess of a value; and every input is database state, so every replica computes
// the same tag for the same state.
//
// Which folders an answer depends on is known only once it is built (a reference names a
// folder inside a value). So an answer records its dependencies as it is built
// (AnswerDeps); the tag is the hash of their current state. A replica remembers, per
// request shape, the dependencies of the last answer: a conditional request whose tag is
// still that of those dependencies' current state is answered 304 without reading or
// opening anything else. Nothing changes an answer without changing one of the
// dependencies it was built from (a value: its folder's version; a new import: the import
// list; a referenced secret: its folder; a tag's name or colour: the project's tags; a
// role: the rules), and versions only grow, so a tag never comes back to mean another answer.
import { createHash } from 'node:crypto';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { SecretImportRow } from '../../storage/secretImports.js';
import type { TagRow } from '../../storage/secretTags.js';
import type { CompiledRules } from './access.js';
import { AppError } from '../errors.js';
import type { FolderSnapshot } from './caches.js';
import type { FolderSnapshots } from './snapshots.js';

type FolderDep = { env: EnvironmentRow; path: string; recursive: boolean; snap: FolderSnapshot | null };

/**
 * What one answer was built from, recorded while it was built, with the state it was read
 * in: the tag names that state, not a later one (a write between the read and the tag
 * must not give an old answer a new tag).
 */
export class AnswerDeps {
  // Made when first used: the hot path's answer reads one folder and follows no import.
  /** `env id / r|f / path` → the folder (or subtree) read, and the snapshot read (null: missing). */
  readonly folders = new Map<string, FolderDep>();
  /** `env id / folder id` → an import list followed, as read. */
  imports: Map<string, { env: EnvironmentRow; folderId: string; state: string }> | undefined;
  /** The project's tags as shown (their names and colours are part of the answer); undefined: none shown. */
  tags: string | undefined;
  /** The project's environments, when an answer looked one up by a name it read (an import, a reference). */
  envs: string | undefined;
  /** The rules the answer was built under (what the caller may describe and read). */
  rules: CompiledRules | undefined;

  answeredFor(rules: CompiledRules): this {
    this.rules = rules;
    return this;
  }

  environments(project: ProjectRecord): void {
    this.envs = envState(project);
  }

  folder(env: EnvironmentRow, path: string, recursive: boolean, snap: FolderSnapshot | null): void {
    this.folders.set(`${env.id}/${recursive ? 'r' : 'f'}/${path}`, { env, path, recursive, snap });
  }

  importList(env: EnvironmentRow, folderId: string, rows: readonly SecretImportRow[]): void {
    (this.imports ??= new Map()).set(`${env.id}/${folderId}`, { env, folderId, state: importState(rows) });
  }

  tagsShown(tags: readonly TagRow[]): void {
    this.tags = tagState(tags);
  }
}

const folderState = (snap: FolderSnapshot | null) => (snap === null ? 'missing' : snap.folders.map((x) => `${x.id}@${x.version}`).join(','));
const importState = (rows: readonly SecretImportRow[]) => rows.map((r) => `${r.id}:${r.importEnvId}:${r.importPath}`).join(',');
const envState = (project: ProjectRecord) => project.environments.map((e) => `${e.id}:${e.slug}`).sort().join(',');
const tagState = (tags: readonly TagRow[]) => JSON.stringify(tags.map((t) => [t.id, t.slug, t.color]).sort());
const isSingleFolder = (d: AnswerDeps) => d.folders.size === 1 && d.imports === undefined && d.tags === undefined && d.envs === undefined;
/** Both read one folder, from the same snapshot (the hot path's repeated read). */
function sameSingleRead(a: AnswerDeps, b: AnswerDeps): boolean {
  if (!isSingleFolder(a) || !isSingleFolder(b) || a.rules !== b.rules) return false;
  const [ka, fa] = a.folders.entries().next().value!;
  const [kb, fb] = b.folders.entries().next().value!;
  return ka === kb && fa.snap === fb.snap;
}
const byKey = <V>(m: Map<string, V>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));

/** The recorded state of `d`, as text (no value, no ciphertext). */
function recordedState(d: AnswerDeps): string {
  const parts: string[] = [];
  for (const [key, f] of byKey(d.folders)) parts.push(`F ${key} ${folderState(f.snap)}`);
  if (d.imports) for (const [key, i] of byKey(d.imports)) parts.push(`I ${key} ${i.state}`);
  if (d.tags !== undefined) parts.push(`T ${d.tags}`);
  if (d.envs !== undefined) parts.push(`E ${d.envs}`);
  return parts.join('\n');
}

export interface AnswerTagDeps {
  snapshots: Pick<FolderSnapshots, 'get' | 'held'>;
  imports?: { ofFolder(env: EnvironmentRow, folderId: string): Promise<SecretImportRow[]> };
  tags?: { of(project: ProjectRecord): Promise<TagRow[]> };
}

/** The rules' identity in a tag: the same rules, the same text (compiled once per role version). */
const rulesText = new WeakMap<CompiledRules, string>();
export function rulesFingerprint(rules: CompiledRules): string {
  let text = rulesText.get(rules);
  if (text === undefined) {
    const rule = (r: CompiledRules['allow'][number]) => [r.bits, r.environment, r.path?.source ?? null];
    text = JSON.stringify([rules.anywhere, rules.allow.map(rule), rules.deny.map(rule)]);
    rulesText.set(rules, text);
  }
  return text;
}

/** A strong validator in HTTP's syntax: 128 bits of SHA-256, base64url. */
export function entityTag(parts: readonly string[]): string {
  return `"${createHash('sha256').update(parts.join('\u0000')).digest('base64url').slice(0, 22)}"`;
}

/** Does an If-None-Match header name `tag`? (`*`, a list, and weak comparison, as RFC 9110 13.1.2.) */
export function noneMatch(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  const h = header.trim();
  if (h === '*') return true;
  if (h === tag) return true;
  for (const part of h.split(',')) {
    const p = part.trim();
    if ((p.startsWith('W/') ? p.slice(2) : p) === tag) return true;
  }
  return false;
}

export function answerTags(deps: AnswerTagDeps) {
  /** The current state of what `d` names, read again (cached snapshots; nothing opened). */
  async function currentState(project: ProjectRecord, d: AnswerDeps): Promise<AnswerDeps> {
    const now = new AnswerDeps();
    for (const f of d.folders.values()) {
      let snap: FolderSnapshot | null;
      try {
        snap = deps.snapshots.held(f.env, f.path, f.recursive) ?? (await deps.snapshots.get(f.env, f.path, f.recursive));
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'SECRET_PATH_NOT_FOUND') throw err;
        snap = null;
      }
      now.folder(f.env, f.path, f.recursive, snap);
    }
    for (const i of d.imports?.values() ?? []) now.importList(i.env, i.folderId, deps.imports ? await deps.imports.ofFolder(i.env, i.folderId) : []);
    if (d.tags !== undefined) now.tagsShown(deps.tags ? await deps.tags.of(project) : []);
    if (d.envs !== undefined) now.environments(project);
    return now;
  }

  /**
   * The hot path: an answer read from one folder snapshot and nothing else (no imports, no
   * tags). Its tag is kept on the snapshot (a snapshot never changes; a new version is a
   * new snapshot), so a repeated read hashes nothing. The same text as recordedState().
   */
  const bySnapshot = new WeakMap<FolderSnapshot, Map<string, string>>();
  const PER_SNAPSHOT = 64;
  function tag(d: AnswerDeps, request: string, rulesFp: string): string {
    const only = isSingleFolder(d) ? d.folders.entries().next().value! : undefined;
    const snap = only?.[1].snap;
    if (!only || !snap) return entityTag([request, rulesFp, recordedState(d)]);
    let tags = bySnapshot.get(snap);
    if (tags === undefined) bySnapshot.set(snap, (tags = new Map()));
    const k = `${request}\u0000${rulesFp}`;
    let t = tags.get(k);
    if (t === undefined) {
      t = entityTag([request, rulesFp, `F ${only[0]} ${folderState(snap)}`]);
      if (tags.size < PER_SNAPSHOT) tags.set(k, t);
    }
    return t;
  }

  /** Held snapshots only, else undefined (then currentState reads). */
  function heldState(d: AnswerDeps): AnswerDeps | undefined {
    if (d.imports !== undefined || d.tags !== undefined || d.envs !== undefined) return undefined;
    const now = new AnswerDeps();
    for (const f of d.folders.values()) {
      const snap = deps.snapshots.held(f.env, f.path, f.recursive);
      if (snap === undefined) return undefined;
      now.folder(f.env, f.path, f.recursive, snap);
    }
    return now;
  }

  // The dependencies of the last answer per request shape, on this replica (bounded).
  const lastDeps = new Map<string, AnswerDeps>();
  const MAX_REMEMBERED = 4096;

  return {
    /** The tag of an answer to `request` (route and query text) for `rules`, built from `d` (as recorded). */
    tagOf(rules: CompiledRules, request: string, d: AnswerDeps): string {
      const rulesFp = rulesFingerprint(rules);
      const key = `${request}\u0000${rulesFp}`;
      const last = lastDeps.get(key);
      // A repeated read keeps the entry it has: one more object reached from this
      // long-lived map per request would outlive young collections (promotion).
      if (last === undefined || !sameSingleRead(last, d)) {
        if (last === undefined && lastDeps.size >= MAX_REMEMBERED) lastDeps.delete(lastDeps.keys().next().value!);
        lastDeps.set(key, d);
      }
      return tag(d, request, rulesFp);
    },

    /**
     * The tag the last answer this replica built for `request` and `rules` would have now
     * (its dependencies read again, nothing opened), or undefined when it built none: then
     * only building the answer tells.
     */
    rememberedTag(project: ProjectRecord, rules: CompiledRules, request: string): string | Promise<string> | undefined {
      const rulesFp = rulesFingerprint(rules);
      const d = lastDeps.get(`${request}\u0000${rulesFp}`);
      if (d === undefined) return undefined;
      const held = heldState(d);
      if (held !== undefined) return tag(held, request, rulesFp);
      return currentState(project, d).then((now) => tag(now, request, rulesFp));
    },
  };
}
export type AnswerTags = ReturnType<typeof answerTags>;
