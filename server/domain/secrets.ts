// Reading and writing secrets. Reads are the operator's hot path: ids and ciphertext
// come from caches, and every value a response holds is opened in ONE crypto task
// (plus, when references are expanded, one per round of references the opened values
// name and the response does not already hold).
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { CacheBus } from '../../storage/cache.js';
import type { Store } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { SecretCipherRow } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import { auditActor, isUuid, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics, type Caches, type FolderSnapshot } from './caches.js';
import { dataKeyAad } from './keyring.js';
import { normaliseSecretPath } from './paths.js';
import { expandReferences, targetId, type ReferenceTarget } from './references.js';
import { CONTROL_CHARACTER, LONE_SURROGATE } from './text.js';

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
}

export interface ReadQuery {
  project: ProjectRef;
  environment: string;
  secretPath?: string;
  expandSecretReferences?: boolean;
  viewSecretValue?: boolean;
}

/** What binds a sealed value (or comment) to its row: a blob moved elsewhere will not open. */
export function secretAad(
  part: 'value' | 'comment',
  p: { projectId: string; environmentId: string; folderId: string; secretId: string; key: string; version: number },
): string {
  return `vault-standalone:secret:v1:${p.projectId}:${p.environmentId}:${p.folderId}:${p.secretId}:${p.key}:${p.version}:${part}`;
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

/** One version of a secret, opened, for the version history. */
export interface SecretVersionView {
  id: string;
  secretId: string;
  projectId: string;
  environment: string;
  path: string;
  version: number;
  key: string;
  value: string;
  comment: string;
  actorType: string;
  actorId: string | null;
  createdAt: Date;
}

/** What an export holds: names, values and comments of one folder, and where they came from. */
export interface SecretExport {
  project: { id: string; slug: string };
  environment: string;
  path: string;
  entries: { key: string; value: string; comment: string }[];
}

export interface SecretsDeps {
  store: Store;
  crypto: Pick<Crypto, 'openMany' | 'sealMany'>;
  access: AccessControl;
  caches: Pick<Caches, 'folders'>;
  bus: CacheBus;
}

export function secretsDomain(deps: SecretsDeps) {
  const { store, crypto, access, caches, bus } = deps;
  // Concurrent reads of the same folder version share one decryption task.
  const opening = new Map<FolderSnapshot, Promise<string[]>>();

  async function snapshot(env: EnvironmentRow, path: string, recursive: boolean): Promise<FolderSnapshot> {
    const snap = await caches.folders.get(`${env.id}:${recursive ? 'r' : 'f'}:${path}`, async () => {
      const folders = recursive
        ? await store.folders.subtree(env.id, path)
        : [await store.folders.byPath(env.id, path)].filter((f) => f !== undefined);
      if (folders[0]?.path !== path) return null;
      return { folders, rows: await store.secrets.listByFolders(folders.map((f) => f.id)) };
    });
    if (!snap) {
      throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);
    }
    return snap;
  }

  const keyAadOf = (project: ProjectRecord) => dataKeyAad(project.dataKeyId);

  /** Seals one version's value (and comment, when there is one) in one task. */
  async function sealVersion(project: ProjectRecord, at: Parameters<typeof secretAad>[1], value: string, comment: string | undefined) {
    const items = [{ plaintext: value, aad: secretAad('value', at) }];
    if (comment) items.push({ plaintext: comment, aad: secretAad('comment', at) });
    const [valueBlob, commentBlob] = await crypto.sealMany(project.wrappedDataKey, keyAadOf(project), items);
    return { valueBlob: valueBlob!, commentBlob: commentBlob ?? null };
  }

  /** The folder at `path`, looked up (and held against a rename or delete) inside the write's transaction. */
  async function folderIn(s: Pick<Store, 'folders'>, env: EnvironmentRow, path: string) {
    const folder = await s.folders.byPathForWrite(env.id, path);
    if (!folder) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);
    return folder;
  }

  /** The blobs to open for `rows`, and beside each the row it belongs to. */
  function cipherItems(project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) {
    const items: { blob: Buffer; aad: string }[] = [];
    const owners: SecretCipherRow[] = [];
    for (const r of rows) {
      const at = { projectId: project.id, environmentId: env.id, folderId: r.folderId, secretId: r.id, key: r.key, version: r.version };
      if (withValues) {
        items.push({ blob: r.valueBlob, aad: secretAad('value', at) });
        owners.push(r);
      }
      if (r.commentBlob) {
        items.push({ blob: r.commentBlob, aad: secretAad('comment', at) });
        owners.push(r);
      }
    }
    return { items, owners };
  }

  /**
   * One crypto task. A blob that does not open (altered in storage, or copied from another
   * row) is not bad input: it is a 500 that names the row, never a value or a guess.
   */
  async function openOwned(project: ProjectRecord, items: { blob: Buffer; aad: string }[], owners: readonly { id: string }[]): Promise<string[]> {
    if (items.length === 0) return [];
    try {
      return await crypto.openMany(project.wrappedDataKey, keyAadOf(project), items);
    } catch (err) {
      const { code, index } = err as { code?: unknown; index?: unknown };
      if (code !== 'OPEN_FAILED') throw err;
      const owner = typeof index === 'number' ? owners[index] : undefined;
      throw new AppError(
        'INTERNAL',
        `Stored secret ${owner ? `${owner.id} ` : ''}could not be decrypted: its stored data was altered or belongs to another secret`,
        { errorName: 'DecryptionFailed' },
      );
    }
  }

  /** Opens comments, and values unless `withValues` is false, of `rows` in one task. */
  async function open(project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) {
    const { items, owners } = cipherItems(project, env, rows, withValues);
    const plain = await openOwned(project, items, owners);
    const values: string[] = [];
    const comments: string[] = [];
    let i = 0;
    for (const r of rows) {
      if (withValues) values.push(plain[i++]!);
      comments.push(r.commentBlob ? plain[i++]! : '');
    }
    return { values, comments };
  }

  function openSnapshot(project: ProjectRecord, env: EnvironmentRow, snap: FolderSnapshot): Promise<string[]> {
    let p = opening.get(snap);
    if (!p) {
      const { items, owners } = cipherItems(project, env, snap.rows);
      p = openOwned(project, items, owners);
      opening.set(snap, p);
      const forget = () => opening.delete(snap);
      p.then(forget, forget);
    }
    return p;
  }

  /**
   * Raw values of the referenced secrets (any folder or environment of the project),
   * opened in one task; only the values, and only of the targets asked for.
   */
  async function resolveTargets(project: ProjectRecord, targets: ReferenceTarget[]): Promise<Map<string, string>> {
    const found: { target: ReferenceTarget; row: SecretCipherRow; env: EnvironmentRow }[] = [];
    for (const t of targets) {
      const env = project.environments.find((e) => e.slug === t.environment);
      if (!env) continue;
      let path: string;
      try {
        path = normaliseSecretPath(t.path);
      } catch {
        continue;
      }
      const snap = await snapshot(env, path, false).catch(() => null);
      const row = snap?.rows.find((r) => r.key === t.key);
      if (row) found.push({ target: t, row, env });
    }
    const out = new Map<string, string>();
    if (found.length === 0) return out;
    const items = found.map(({ row, env }) => ({
      blob: row.valueBlob,
      aad: secretAad('value', { projectId: project.id, environmentId: env.id, folderId: row.folderId, secretId: row.id, key: row.key, version: row.version }),
    }));
    const values = await openOwned(project, items, found.map((f) => f.row));
    found.forEach((f, i) => out.set(targetId(f.target), values[i]!));
    return out;
  }

  /**
   * Expands references in `views` in place. `opened`: raw values this request already
   * holds (they are not opened again); everything else referenced is opened by
   * resolveTargets, one task per round.
   */
  async function expand(project: ProjectRecord, env: EnvironmentRow, views: SecretView[], opened: SecretView[]) {
    if (!views.some((v) => v.value.includes('${'))) return;
    const known = new Map<string, string>();
    for (const s of opened) known.set(targetId({ environment: env.slug, path: s.path, key: s.key }), s.value);
    const expanded = await expandReferences(
      views.map((v) => ({ value: v.value, environment: env.slug, path: v.path })),
      known,
      (targets) => resolveTargets(project, targets),
    );
    views.forEach((v, i) => (v.value = expanded[i]!));
  }

  function view(project: ProjectRecord, env: EnvironmentRow, r: SecretCipherRow, path: string, value: string | null, comment: string): SecretView {
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

  return {
    async list(actor: Actor, q: ReadQuery & { recursive?: boolean }): Promise<SecretView[]> {
      const { project } = await access.authorize(actor, q.project, 'secrets:read');
      const env = access.environment(project, q.environment);
      const path = normaliseSecretPath(q.secretPath);
      const snap = await snapshot(env, path, q.recursive ?? false);
      const pathOf = new Map(snap.folders.map((f) => [f.id, f.path]));
      const reveal = q.viewSecretValue !== false;
      if (!reveal) {
        // Nothing is decrypted that the response does not contain; comments are not secret values.
        const { comments } = await open(project, env, snap.rows, false);
        return snap.rows.map((r, i) => view(project, env, r, pathOf.get(r.folderId)!, null, comments[i]!));
      }
      const plain = await openSnapshot(project, env, snap);
      const views: SecretView[] = [];
      let i = 0;
      for (const r of snap.rows) {
        const value = plain[i++]!;
        const comment = r.commentBlob ? plain[i++]! : '';
        views.push(view(project, env, r, pathOf.get(r.folderId)!, value, comment));
      }
      if (q.expandSecretReferences) await expand(project, env, views, views);
      return views;
    },

    async get(actor: Actor, q: ReadQuery & { secretName: string; version?: number; type?: 'shared' | 'personal' }): Promise<SecretView> {
      const { project } = await access.authorize(actor, q.project, 'secrets:read');
      const env = access.environment(project, q.environment);
      const path = normaliseSecretPath(q.secretPath);
      const snap = await snapshot(env, path, false);
      const notFound = () => new AppError('NOT_FOUND', `Secret with name '${q.secretName}' not found`);
      // Personal overrides are not supported: there is never a personal secret to return.
      if (q.type === 'personal') throw notFound();
      let row = snap.rows.find((r) => r.key === q.secretName);
      if (!row) throw notFound();
      const isCurrent = q.version === undefined || q.version === row.version;
      if (q.version !== undefined && !isCurrent) {
        const old = await store.secrets.version(row.id, q.version);
        if (!old) throw new AppError('NOT_FOUND', `Secret '${q.secretName}' has no version ${q.version}`);
        row = { ...row, version: old.version, valueBlob: old.valueBlob, commentBlob: old.commentBlob, key: old.key, updatedAt: old.createdAt };
      }
      const reveal = q.viewSecretValue !== false;
      const { values, comments } = await open(project, env, [row], reveal);
      const v = view(project, env, row, path, reveal ? values[0]! : null, comments[0]!);
      if (reveal && q.expandSecretReferences) {
        // Only what the value names is opened (one task per round of references), never
        // the rest of the folder. The row itself is known already, unless an older
        // version was asked for (a reference to its key means the current one).
        await expand(project, env, [v], isCurrent ? [v] : []);
      }
      return v;
    },

    async create(
      actor: Actor | SystemActor,
      input: {
        project: ProjectRef;
        environment: string;
        secretPath?: string;
        key: string;
        value: string;
        comment?: string;
        skipMultilineEncoding?: boolean;
        /** Marks a key that must never change (e.g. IDP_SECRET_KEY): updates then need an explicit override. */
        immutable?: boolean;
      },
    ): Promise<SecretView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const key = validateSecretName(input.key);
      validateSecretText('secretValue', input.value);
      validateSecretText('secretComment', input.comment);
      const id = randomUUID();
      const row = await store.transaction(async (s) => {
        const folder = await folderIn(s, env, path);
        if (await s.secrets.byKey(folder.id, key)) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: id, key, version: 1 };
        const { valueBlob, commentBlob } = await sealVersion(project, at, input.value, input.comment);
        const inserted = await s.secrets.insert({
          id,
          folderId: folder.id,
          key,
          valueBlob,
          commentBlob,
          skipMultilineEncoding: input.skipMultilineEncoding,
          immutable: input.immutable,
          ...auditActor(actor),
        });
        await s.folders.bumpVersion(folder.id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'create-secret',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          secretKey: key,
          secretVersion: 1,
        });
        return inserted;
      });
      await bus.publish(topics.environment, env.id);
      return view(project, env, row, path, input.value, input.comment ?? '');
    },

    /** A new version with a new value, comment and/or name; unchanged parts are re-sealed for it. */
    async update(
      actor: Actor | SystemActor,
      input: {
        project: ProjectRef;
        environment: string;
        secretPath?: string;
        key: string;
        value?: string;
        comment?: string;
        newKey?: string;
        skipMultilineEncoding?: boolean;
        allowImmutableChange?: boolean;
      },
    ): Promise<SecretView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const key = validateSecretName(input.key);
      const newKey = input.newKey === undefined ? key : validateSecretName(input.newKey);
      validateSecretText('secretValue', input.value);
      validateSecretText('secretComment', input.comment);
      const result = await store.transaction(async (s) => {
        const folder = await folderIn(s, env, path);
        const cur = await s.secrets.byKeyForUpdate(folder.id, key);
        if (!cur) throw new AppError('NOT_FOUND', `Secret with name '${key}' not found`);
        const overridden = cur.immutable && (input.value !== undefined || newKey !== key);
        if (overridden && !input.allowImmutableChange) {
          throw new AppError('CONFLICT', `Secret '${key}' must never change; an explicit override is required to change it`, REQUIRES_OVERRIDE);
        }
        if (newKey !== key && (await s.secrets.byKey(folder.id, newKey))) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const { values, comments } = await open(project, env, [cur]);
        const value = input.value ?? values[0]!;
        const comment = input.comment ?? comments[0]!;
        const version = cur.version + 1;
        const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: cur.id, key: newKey, version };
        const { valueBlob, commentBlob } = await sealVersion(project, at, value, comment);
        const row = await s.secrets.update({
          id: cur.id,
          key: newKey,
          version,
          valueBlob,
          commentBlob,
          skipMultilineEncoding: input.skipMultilineEncoding,
          ...auditActor(actor),
        });
        await s.folders.bumpVersion(folder.id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'update-secret',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          secretKey: newKey,
          secretVersion: version,
          metadata: { ...(newKey !== key ? { renamedFrom: key } : {}), ...(overridden ? IMMUTABLE_OVERRIDE : {}) },
        });
        return { row, value, comment };
      });
      await bus.publish(topics.environment, env.id);
      return view(project, env, result.row, path, result.value, result.comment);
    },

    /** Deletes the secret (and its versions); returns it as it was, value included, as Infisical does. */
    async remove(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; secretPath?: string; key: string; allowImmutableChange?: boolean },
    ): Promise<SecretView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const key = validateSecretName(input.key);
      const result = await store.transaction(async (s) => {
        const folder = await folderIn(s, env, path);
        const cur = await s.secrets.byKeyForUpdate(folder.id, key);
        if (!cur) throw new AppError('NOT_FOUND', `Secret with name '${key}' not found`);
        if (cur.immutable && !input.allowImmutableChange) {
          throw new AppError('CONFLICT', `Secret '${key}' must never change; an explicit override is required to delete it`, REQUIRES_OVERRIDE);
        }
        const { values, comments } = await open(project, env, [cur]);
        await s.secrets.remove(cur.id);
        await s.folders.bumpVersion(folder.id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'delete-secret',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          secretKey: key,
          secretVersion: cur.version,
          ...(cur.immutable ? { metadata: IMMUTABLE_OVERRIDE } : {}),
        });
        return { row: cur, value: values[0]!, comment: comments[0]! };
      });
      await bus.publish(topics.environment, env.id);
      return view(project, env, result.row, path, result.value, result.comment);
    },

    /**
     * Marks an existing secret as never changing (the inventory declares it so, but it was
     * created before, e.g. in the UI). Its value and version stay; returns false when it
     * already was marked.
     */
    async protect(actor: Actor | SystemActor, input: { project: ProjectRef; environment: string; secretPath?: string; key: string }): Promise<boolean> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const key = validateSecretName(input.key);
      const marked = await store.transaction(async (s) => {
        const folder = await folderIn(s, env, path);
        const cur = await s.secrets.byKeyForUpdate(folder.id, key);
        if (!cur) throw new AppError('NOT_FOUND', `Secret with name '${key}' not found`);
        if (!(await s.secrets.markImmutable(cur.id))) return false;
        // Cached snapshots carry the flag.
        await s.folders.bumpVersion(folder.id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'protect-secret',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          secretKey: key,
          secretVersion: cur.version,
        });
        return true;
      });
      if (marked) await bus.publish(topics.environment, env.id);
      return marked;
    },

    /**
     * Creates every secret of the batch or none: names are checked (within the batch and
     * against the folder) before anything is written, all blobs are sealed in one task,
     * and the rows and their audit entries commit in one transaction.
     */
    async createMany(
      actor: Actor | SystemActor,
      input: {
        project: ProjectRef;
        environment: string;
        secretPath?: string;
        secrets: readonly { key: string; value: string; comment?: string; skipMultilineEncoding?: boolean }[];
      },
    ): Promise<SecretView[]> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      if (input.secrets.length === 0) throw new AppError('VALIDATION', 'secrets must hold at least one secret');
      if (input.secrets.length > MAX_BATCH) throw new AppError('VALIDATION', `secrets may hold at most ${MAX_BATCH} secrets`);
      const items = input.secrets.map((x) => {
        validateSecretText('secretValue', x.value);
        validateSecretText('secretComment', x.comment);
        return { ...x, key: validateSecretName(x.key), id: randomUUID() };
      });
      const seen = new Set<string>();
      for (const x of items) {
        if (seen.has(x.key)) throw new AppError('BAD_REQUEST', `Secret '${x.key}' appears more than once in the batch`);
        seen.add(x.key);
      }
      const rows = await store.transaction(async (s) => {
        const folder = await folderIn(s, env, path);
        const existing = await s.secrets.byKeys(folder.id, [...seen]);
        if (existing.length > 0) {
          const names = existing.map((r) => r.key).sort();
          throw new AppError('BAD_REQUEST', `Secret already exists: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}`);
        }
        const plain: { plaintext: string; aad: string }[] = [];
        for (const x of items) {
          const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: x.id, key: x.key, version: 1 };
          plain.push({ plaintext: x.value, aad: secretAad('value', at) });
          if (x.comment) plain.push({ plaintext: x.comment, aad: secretAad('comment', at) });
        }
        const blobs = await crypto.sealMany(project.wrappedDataKey, keyAadOf(project), plain);
        let i = 0;
        const toInsert = items.map((x) => ({
          id: x.id,
          folderId: folder.id,
          key: x.key,
          valueBlob: blobs[i++]!,
          commentBlob: x.comment ? blobs[i++]! : null,
          skipMultilineEncoding: x.skipMultilineEncoding,
        }));
        const inserted = await s.secrets.insertMany(toInsert, auditActor(actor));
        await s.folders.bumpVersion(folder.id);
        for (const x of items) {
          await s.audit.append(s.tx, {
            ...auditActor(actor),
            eventType: 'create-secret',
            projectId: project.id,
            environment: env.slug,
            secretPath: path,
            secretKey: x.key,
            secretVersion: 1,
            metadata: { batch: true },
          });
        }
        return inserted;
      });
      await bus.publish(topics.environment, env.id);
      return rows.map((r, n) => view(project, env, r, path, items[n]!.value, items[n]!.comment ?? ''));
    },

    /** The version history of a secret named by id, newest first, opened in one task. */
    async listVersions(actor: Actor | SystemActor, secretId: string, page: { offset?: number; limit?: number } = {}): Promise<SecretVersionView[]> {
      const { project, env, loc } = await locate(actor, secretId, 'secrets:read');
      const rows = await store.secrets.versions(loc.id, { offset: page.offset ?? 0, limit: page.limit ?? 20 });
      const items: { blob: Buffer; aad: string }[] = [];
      for (const r of rows) {
        const at = { projectId: project.id, environmentId: env.id, folderId: r.folderId, secretId: r.secretId, key: r.key, version: r.version };
        items.push({ blob: r.valueBlob, aad: secretAad('value', at) });
        if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', at) });
      }
      const plain = items.length ? await crypto.openMany(project.wrappedDataKey, keyAadOf(project), items) : [];
      let i = 0;
      return rows.map((r) => ({
        id: r.id,
        secretId: r.secretId,
        projectId: project.id,
        environment: env.slug,
        path: loc.folderPath,
        version: r.version,
        key: r.key,
        value: plain[i++]!,
        comment: r.commentBlob ? plain[i++]! : '',
        actorType: r.actorType,
        actorId: r.actorId,
        createdAt: r.createdAt,
      }));
    },

    /**
     * Makes a NEW version whose name, value and comment equal those of `version`: the old
     * blobs are opened under their own version's AAD and sealed again under the new one's.
     */
    async restoreVersion(actor: Actor | SystemActor, secretId: string, version: number, opts: { allowImmutableChange?: boolean } = {}): Promise<SecretView> {
      const { project, env, loc } = await locate(actor, secretId, 'secrets:write');
      const result = await store.transaction(async (s) => {
        const cur = await s.secrets.byIdForUpdate(loc.id);
        if (!cur) throw new AppError('NOT_FOUND', `Secret with ID '${secretId}' not found`);
        const old = await s.secrets.version(cur.id, version);
        if (!old) throw new AppError('NOT_FOUND', `Secret '${cur.key}' has no version ${version}`);
        if (cur.immutable && !opts.allowImmutableChange) {
          throw new AppError('CONFLICT', `Secret '${cur.key}' must never change; an explicit override is required to restore a version`, REQUIRES_OVERRIDE);
        }
        if (old.key !== cur.key && (await s.secrets.byKey(cur.folderId, old.key))) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const oldAt = { projectId: project.id, environmentId: env.id, folderId: old.folderId, secretId: cur.id, key: old.key, version: old.version };
        const opened = await crypto.openMany(project.wrappedDataKey, keyAadOf(project), [
          { blob: old.valueBlob, aad: secretAad('value', oldAt) },
          ...(old.commentBlob ? [{ blob: old.commentBlob, aad: secretAad('comment', oldAt) }] : []),
        ]);
        const value = opened[0]!;
        const comment = old.commentBlob ? opened[1]! : '';
        const next = cur.version + 1;
        const at = { projectId: project.id, environmentId: env.id, folderId: cur.folderId, secretId: cur.id, key: old.key, version: next };
        const { valueBlob, commentBlob } = await sealVersion(project, at, value, comment);
        const row = await s.secrets.update({ id: cur.id, key: old.key, version: next, valueBlob, commentBlob, ...auditActor(actor) });
        await s.folders.bumpVersion(cur.folderId);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'restore-secret-version',
          projectId: project.id,
          environment: env.slug,
          secretPath: loc.folderPath,
          secretKey: old.key,
          secretVersion: next,
          metadata: { restoredFrom: old.version, ...(old.key !== cur.key ? { renamedFrom: cur.key } : {}), ...(cur.immutable ? IMMUTABLE_OVERRIDE : {}) },
        });
        return { row, value, comment };
      });
      await bus.publish(topics.environment, env.id);
      return view(project, env, result.row, loc.folderPath, result.value, result.comment);
    },

    /**
     * Everything in one folder, opened, for a project admin's download. Recorded in the
     * audit trail (environment, path, format, how many; never a value) before the data
     * is handed out: an export that cannot be audited does not happen.
     */
    async exportSecrets(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; secretPath?: string; format: string },
    ): Promise<SecretExport> {
      const { project } = await access.authorize(actor, input.project, 'project:admin');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const snap = await snapshot(env, path, false);
      const { values, comments } = await open(project, env, snap.rows);
      await store.transaction(async (s) => {
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'export-secrets',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          metadata: { format: input.format, count: snap.rows.length },
        });
      });
      return {
        project: { id: project.id, slug: project.slug },
        environment: env.slug,
        path,
        entries: snap.rows.map((r, i) => ({ key: r.key, value: values[i]!, comment: comments[i]! })),
      };
    },
  };

  /** Resolves a secret named by id to its project (404, then the role check: 403) and environment. */
  async function locate(actor: Actor | SystemActor, secretId: string, permission: 'secrets:read' | 'secrets:write') {
    const notFound = () => new AppError('NOT_FOUND', `Secret with ID '${secretId}' not found`);
    const loc = isUuid(secretId) ? await store.secrets.locate(secretId.toLowerCase()) : undefined;
    if (!loc) throw notFound();
    const { project } = await access.authorize(actor, { id: loc.projectId }, permission);
    const env = project.environments.find((e) => e.id === loc.environmentId);
    if (!env) throw notFound();
    return { project, env, loc };
  }
}
export type SecretsDomain = ReturnType<typeof secretsDomain>;
