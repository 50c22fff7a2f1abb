// Reading and writing secrets. Reads are the operator's hot path: ids and ciphertext
// come from caches, and every value a response holds is opened in ONE crypto task
// (plus one per round of references to other folders).
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { CacheBus } from '../../storage/cache.js';
import type { Store } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { SecretCipherRow } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import { auditActor, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics, type Caches, type FolderSnapshot } from './caches.js';
import { dataKeyAad } from './keyring.js';
import { normaliseSecretPath } from './paths.js';
import { expandReferences, targetId, type ReferenceTarget } from './references.js';

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
  if (!KEY_NAME.test(key) || /[\u0000-\u001f\u007f]/.test(key)) {
    throw new AppError('VALIDATION', 'Secret name must be 1 to 255 characters without ":" or "/"');
  }
  return key;
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

  function cipherItems(project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) {
    const items: { blob: Buffer; aad: string }[] = [];
    for (const r of rows) {
      const at = { projectId: project.id, environmentId: env.id, folderId: r.folderId, secretId: r.id, key: r.key, version: r.version };
      if (withValues) items.push({ blob: r.valueBlob, aad: secretAad('value', at) });
      if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', at) });
    }
    return items;
  }

  /** Opens comments, and values unless `withValues` is false, of `rows` in one task. */
  async function open(project: ProjectRecord, env: EnvironmentRow, rows: readonly SecretCipherRow[], withValues = true) {
    const items = cipherItems(project, env, rows, withValues);
    const plain = items.length ? await crypto.openMany(project.wrappedDataKey, keyAadOf(project), items) : [];
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
      p = crypto.openMany(project.wrappedDataKey, keyAadOf(project), cipherItems(project, env, snap.rows));
      opening.set(snap, p);
      const forget = () => opening.delete(snap);
      p.then(forget, forget);
    }
    return p;
  }

  /** Raw values of references to other places in the project, opened in one task. */
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
    const values = await crypto.openMany(project.wrappedDataKey, keyAadOf(project), items);
    found.forEach((f, i) => out.set(targetId(f.target), values[i]!));
    return out;
  }

  async function expand(project: ProjectRecord, env: EnvironmentRow, views: SecretView[], siblings: SecretView[]) {
    if (!views.some((v) => v.value.includes('${'))) return;
    const known = new Map<string, string>();
    for (const s of siblings) known.set(targetId({ environment: env.slug, path: s.path, key: s.key }), s.value);
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
      if (q.version !== undefined && q.version !== row.version) {
        const old = await store.secrets.version(row.id, q.version);
        if (!old) throw new AppError('NOT_FOUND', `Secret '${q.secretName}' has no version ${q.version}`);
        row = { ...row, version: old.version, valueBlob: old.valueBlob, commentBlob: old.commentBlob, key: old.key, updatedAt: old.createdAt };
      }
      const reveal = q.viewSecretValue !== false;
      const { values, comments } = await open(project, env, [row], reveal);
      const v = view(project, env, row, path, reveal ? values[0]! : null, comments[0]!);
      if (reveal && q.expandSecretReferences && v.value.includes('${')) {
        // Siblings are opened only when the value refers to something.
        const siblings = snap.rows.filter((r) => r.id !== row.id);
        const opened = siblings.length ? (await open(project, env, siblings)).values : [];
        await expand(project, env, [v], siblings.map((r, i) => view(project, env, r, path, opened[i]!, '')));
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
      const id = randomUUID();
      const row = await store.transaction(async (s) => {
        const folder = await s.folders.byPath(env.id, path);
        if (!folder) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);
        if (await s.secrets.byKey(folder.id, key)) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: id, key, version: 1 };
        const items = [{ plaintext: input.value, aad: secretAad('value', at) }];
        if (input.comment) items.push({ plaintext: input.comment, aad: secretAad('comment', at) });
        const [valueBlob, commentBlob] = await crypto.sealMany(project.wrappedDataKey, keyAadOf(project), items);
        const inserted = await s.secrets.insert({
          id,
          folderId: folder.id,
          key,
          valueBlob: valueBlob!,
          commentBlob: commentBlob ?? null,
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
        allowImmutableChange?: boolean;
      },
    ): Promise<SecretView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      const key = validateSecretName(input.key);
      const newKey = input.newKey === undefined ? key : validateSecretName(input.newKey);
      const result = await store.transaction(async (s) => {
        const folder = await s.folders.byPath(env.id, path);
        if (!folder) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);
        const cur = await s.secrets.byKeyForUpdate(folder.id, key);
        if (!cur) throw new AppError('NOT_FOUND', `Secret with name '${key}' not found`);
        if (cur.immutable && !input.allowImmutableChange && (input.value !== undefined || newKey !== key)) {
          throw new AppError('CONFLICT', `Secret '${key}' must never change; an explicit override is required to change it`);
        }
        if (newKey !== key && (await s.secrets.byKey(folder.id, newKey))) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const { values, comments } = await open(project, env, [cur]);
        const value = input.value ?? values[0]!;
        const comment = input.comment ?? comments[0]!;
        const version = cur.version + 1;
        const at = { projectId: project.id, environmentId: env.id, folderId: folder.id, secretId: cur.id, key: newKey, version };
        const items = [{ plaintext: value, aad: secretAad('value', at) }];
        if (comment) items.push({ plaintext: comment, aad: secretAad('comment', at) });
        const [valueBlob, commentBlob] = await crypto.sealMany(project.wrappedDataKey, keyAadOf(project), items);
        const row = await s.secrets.update({ id: cur.id, key: newKey, version, valueBlob: valueBlob!, commentBlob: commentBlob ?? null, ...auditActor(actor) });
        await s.folders.bumpVersion(folder.id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'update-secret',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
          secretKey: newKey,
          secretVersion: version,
          metadata: newKey !== key ? { renamedFrom: key } : {},
        });
        return { row, value, comment };
      });
      await bus.publish(topics.environment, env.id);
      return view(project, env, result.row, path, result.value, result.comment);
    },
  };
}
export type SecretsDomain = ReturnType<typeof secretsDomain>;
