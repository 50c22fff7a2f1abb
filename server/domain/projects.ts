// Projects: a data key of their own, and the default environments.
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { CacheBus } from '../../storage/cache.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord, ProjectRow } from '../../storage/projects.js';
import type { FolderRow } from '../../storage/folders.js';
import type { SecretInventoryRow } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import { auditActor, isUuid, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { dataKeyAad } from './keyring.js';
import { MEMBERSHIP_EVENTS } from './memberships.js';
import { normaliseSecretPath } from './paths.js';
import { IMMUTABLE_OVERRIDE, REQUIRES_FORCE, REQUIRES_OVERRIDE } from './secrets.js';
import { validateName } from './text.js';

export const DEFAULT_ENVIRONMENTS = [
  { name: 'Development', slug: 'dev' },
  { name: 'Staging', slug: 'staging' },
  { name: 'Production', slug: 'prod' },
] as const;

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
}

export function validateSlug(slug: string, what = 'slug'): string {
  if (slug.length < 1 || slug.length > 64 || !SLUG.test(slug)) {
    throw new AppError('VALIDATION', `${what} must be 1 to 64 lower-case letters, digits and single hyphens`);
  }
  return slug;
}

/** A project as the admin API shows it: no key material. */
export type ProjectView = ProjectRow & { environments: EnvironmentRow[] };

/**
 * A folder's name is stored as given and its path built from it, so it must already be
 * one normalised segment: "x/" would normalise to "/x" but be stored as "/x/".
 */
function validateFolderName(name: string): string {
  if (name === '' || name.includes('/') || normaliseSecretPath(`/${name}`) !== `/${name}`) {
    throw new AppError('VALIDATION', 'Folder name must be a single path segment (letters, digits, _ . - only)');
  }
  return name;
}

/** The longest path normaliseSecretPath accepts: a folder moved beyond it could not be named. */
const MAX_PATH_LENGTH = 1024;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export interface ForceOptions {
  force?: boolean;
  /** Also needed when the secrets to delete include keys marked as never changing. */
  overrideImmutable?: boolean;
}

/**
 * The force rule: deleting what holds secrets needs an explicit `force=true`, and
 * `overrideImmutable=true` as well when any of them must never change.
 */
function refuseUnlessForced(secrets: readonly SecretInventoryRow[], opts: ForceOptions, what: string) {
  if (secrets.length > 0 && !opts.force) {
    throw new AppError('CONFLICT', `${what} holds ${plural(secrets.length, 'secret')}; pass force=true to delete it with them`, REQUIRES_FORCE);
  }
  const protectedCount = secrets.filter((x) => x.immutable).length;
  if (protectedCount > 0 && !opts.overrideImmutable) {
    throw new AppError(
      'CONFLICT',
      `${what} holds ${plural(protectedCount, 'secret')} marked as never changing; pass overrideImmutable=true as well to delete ${protectedCount === 1 ? 'it' : 'them'}`,
      REQUIRES_OVERRIDE,
    );
  }
}

/**
 * One `delete-secret` entry per secret a cascading delete removes (name, path,
 * environment, version; never a value), in the delete's transaction.
 */
async function auditCascade(
  s: TxStores,
  actor: Actor | SystemActor,
  projectId: string,
  slugOf: (environmentId: string) => string,
  secrets: readonly SecretInventoryRow[],
  cascade: 'delete-project' | 'delete-environment' | 'delete-folder',
) {
  for (const x of secrets) {
    await s.audit.append(s.tx, {
      ...auditActor(actor),
      eventType: 'delete-secret',
      projectId,
      environment: slugOf(x.environmentId),
      secretPath: x.folderPath,
      secretKey: x.key,
      secretVersion: x.version,
      metadata: { cascade, ...(x.immutable ? IMMUTABLE_OVERRIDE : {}) },
    });
  }
}

/**
 * Rethrows a unique-index refusal (SQLSTATE 23505: a concurrent request took the name
 * between our check and our insert) as the answer the check itself would have given.
 */
function takenMeanwhile(message: string) {
  return (err: unknown): never => {
    if ((err as { code?: unknown } | null)?.code === '23505') throw new AppError('BAD_REQUEST', message);
    throw err;
  };
}

function environmentOf(project: ProjectRecord, envId: string): EnvironmentRow {
  const env = isUuid(envId) ? project.environments.find((e) => e.id === envId.toLowerCase()) : undefined;
  if (!env) throw new AppError('NOT_FOUND', `Environment with ID '${envId}' in project '${project.slug}' not found`);
  return env;
}

/** A folder as the folder routes answer it. */
export interface FolderView {
  id: string;
  name: string;
  path: string;
  parentId: string | null;
  environmentId: string;
}

const folderView = (f: FolderRow): FolderView => ({ id: f.id, name: f.name, path: f.path, parentId: f.parentId, environmentId: f.environmentId });

/**
 * The direct sub-folder of `parentPath` named by id or name, with its whole subtree
 * locked (FOR UPDATE) for the rest of the transaction: nothing is added below it, and no
 * secret written into it, until the caller's change commits.
 */
async function childOf(s: TxStores, env: EnvironmentRow, parentPath: string, idOrName: string) {
  const notFound = () => new AppError('NOT_FOUND', `Folder '${idOrName}' in '${parentPath}' of environment '${env.slug}' not found`);
  const parent = await s.folders.byPath(env.id, parentPath);
  if (!parent) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${parentPath}' in environment '${env.slug}' not found`);
  const children = await s.folders.children(parent.id);
  const folder = isUuid(idOrName) ? children.find((f) => f.id === idOrName.toLowerCase()) : children.find((f) => f.name === idOrName);
  if (!folder) throw notFound();
  let subtree = await s.folders.lockSubtree(env.id, folder.path);
  // Renamed or deleted between the look-up and the lock.
  if (!subtree.includes(folder.id)) throw notFound();
  // A sub-folder whose create committed while we waited for the lock is not in that
  // statement's snapshot: lock again until nothing new appears.
  for (;;) {
    const again = await s.folders.lockSubtree(env.id, folder.path);
    if (again.length === subtree.length) break;
    subtree = again;
  }
  return { folder, subtree };
}

export interface ProjectsDeps {
  store: Store;
  crypto: Pick<Crypto, 'generateDataKey' | 'rootKeyVersion'>;
  access: AccessControl;
  bus: CacheBus;
}

export function projectsDomain(deps: ProjectsDeps) {
  const { store, crypto, access, bus } = deps;
  return {
    async create(actor: Actor | SystemActor, input: { name: string; slug?: string }): Promise<ProjectRecord> {
      // Projects belong to people; a machine identity only ever works inside one it was given.
      if (actor.kind === 'identity') throw new AppError('FORBIDDEN', 'Machine identities may not create projects');
      // The same rule as a rename: control characters (a NUL cannot even be stored) are refused.
      const name = validateName(input.name, 'projectName');
      const slug = validateSlug(input.slug?.trim() || slugify(name));
      const keyId = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(keyId));
      const id = await store.transaction(async (s) => {
        if (await s.projects.bySlug(slug)) throw new AppError('BAD_REQUEST', `A project with slug '${slug}' already exists`);
        const org = await s.organizations.ensureDefault();
        await s.keys.insert({ id: keyId, purpose: 'project', rootKeyVersion: crypto.rootKeyVersion, wrapped });
        const projectId = await s.projects.insert({ orgId: org.id, name, slug, dataKeyId: keyId });
        for (const [position, e] of DEFAULT_ENVIRONMENTS.entries()) {
          await s.projects.insertEnvironment({ projectId, name: e.name, slug: e.slug, position });
        }
        if (actor.kind === 'user') await s.memberships.upsertUser(projectId, actor.userId, 'admin');
        await s.audit.append(s.tx, { ...auditActor(actor), eventType: 'create-project', projectId, metadata: { slug } });
        return projectId;
      }).catch(takenMeanwhile(`A project with slug '${slug}' already exists`));
      await bus.publish(topics.projectSlug, slug);
      return (await store.projects.byId(id))!;
    },

    /** Every project for the superadmin (and the service); otherwise those the actor is a member of. */
    async list(actor: Actor | SystemActor): Promise<ProjectView[]> {
      if (actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin)) return store.projects.listWithEnvironments();
      return store.projects.listWithEnvironments(actor.kind === 'user' ? { userId: actor.userId } : { identityId: actor.identityId });
    },

    /** One project, for any member whose role reads secrets. */
    async get(actor: Actor | SystemActor, ref: ProjectRef): Promise<ProjectRecord> {
      return (await access.authorize(actor, ref, 'secrets:read')).project;
    },

    /** Renames the project and/or changes its slug; the old slug stops resolving at once. */
    async update(actor: Actor | SystemActor, ref: ProjectRef, input: { name?: string; slug?: string }): Promise<ProjectRecord> {
      const { project } = await access.authorize(actor, ref, 'project:admin');
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      const slug = input.slug === undefined ? undefined : validateSlug(input.slug.trim());
      if (name === undefined && slug === undefined) return project;
      // Compared with the row as locked, not as cached: a concurrent change may have come
      // first (the same change twice is then a no-op, and the audit names the real old values).
      const { old, changes } = await store.transaction(async (s) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
        const old = (await s.projects.byId(project.id))!;
        const changes: { name?: string; slug?: string } = {};
        if (name !== undefined && name !== old.name) changes.name = name;
        if (slug !== undefined && slug !== old.slug) changes.slug = slug;
        if (!changes.name && !changes.slug) return { old, changes };
        if (changes.slug && (await s.projects.bySlug(changes.slug))) {
          throw new AppError('BAD_REQUEST', `A project with slug '${changes.slug}' already exists`);
        }
        await s.projects.update(project.id, changes);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'update-project',
          projectId: project.id,
          metadata: { ...(changes.slug ? { oldSlug: old.slug, slug: changes.slug } : {}), ...(changes.name ? { oldName: old.name, name: changes.name } : {}) },
        });
        return { old, changes };
      }).catch(takenMeanwhile(`A project with slug '${slug}' already exists`));
      if (!changes.name && !changes.slug) return old;
      await bus.publish(topics.project, project.id);
      await bus.publish(topics.projectSlug, old.slug);
      if (changes.slug) await bus.publish(topics.projectSlug, changes.slug);
      return (await store.projects.byId(project.id))!;
    },

    /**
     * Deletes the project with everything in it; refused while it holds secrets unless
     * forced. Every secret and membership it takes along gets its own audit entry.
     */
    async remove(actor: Actor | SystemActor, ref: ProjectRef, opts: ForceOptions = {}): Promise<ProjectRecord> {
      const { project } = await access.authorize(actor, ref, 'project:admin');
      await store.transaction(async (s) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
        const fresh = (await s.projects.byId(project.id))!;
        const folders = await s.folders.lockEnvironments(fresh.environments.map((e) => e.id));
        const secrets = await s.secrets.inventoryOfFolders(folders);
        refuseUnlessForced(secrets, opts, `Project '${project.slug}'`);
        // Read before the cascade removes them; the project lock keeps new ones out meanwhile.
        const members = [...(await s.memberships.list(project.id, 'identity')), ...(await s.memberships.list(project.id, 'user'))];
        await s.projects.remove(project.id);
        const slugs = new Map(fresh.environments.map((e) => [e.id, e.slug]));
        await auditCascade(s, actor, project.id, (id) => slugs.get(id)!, secrets, 'delete-project');
        for (const m of members) {
          const kind = m.identityId ? 'identity' : 'user';
          await s.audit.append(s.tx, {
            ...auditActor(actor),
            eventType: MEMBERSHIP_EVENTS[kind].remove,
            projectId: project.id,
            metadata: { [`${kind}Id`]: (m.identityId ?? m.userId)!, role: m.role, cascade: 'delete-project' },
          });
        }
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'delete-project',
          projectId: project.id,
          metadata: { slug: project.slug, name: project.name, secretsDeleted: secrets.length, membershipsDeleted: members.length },
        });
      });
      await bus.publish(topics.project, project.id);
      await bus.publish(topics.projectSlug, project.slug);
      for (const e of project.environments) await bus.publish(topics.environment, e.id);
      return project;
    },

    async createEnvironment(actor: Actor | SystemActor, ref: ProjectRef, input: { name: string; slug: string }): Promise<EnvironmentRow> {
      const { project } = await access.authorize(actor, ref, 'project:admin');
      const name = validateName(input.name, 'name');
      const slug = validateSlug(input.slug.trim());
      const env = await store.transaction(async (s) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
        const fresh = (await s.projects.byId(project.id))!;
        if (fresh.environments.some((e) => e.slug === slug)) throw new AppError('BAD_REQUEST', `Environment with slug '${slug}' already exists`);
        if (fresh.environments.length >= 100) throw new AppError('BAD_REQUEST', 'A project holds at most 100 environments');
        const position = await s.projects.nextEnvironmentPosition(project.id);
        const e = await s.projects.insertEnvironment({ projectId: project.id, name, slug, position });
        await s.audit.append(s.tx, { ...auditActor(actor), eventType: 'create-environment', projectId: project.id, environment: slug, metadata: { name } });
        return e;
      });
      await bus.publish(topics.project, project.id);
      return env;
    },

    async updateEnvironment(actor: Actor | SystemActor, ref: ProjectRef, envId: string, input: { name?: string; slug?: string }): Promise<EnvironmentRow> {
      const { project } = await access.authorize(actor, ref, 'project:admin');
      const env = environmentOf(project, envId);
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      const slug = input.slug === undefined ? undefined : validateSlug(input.slug.trim());
      if (name === undefined && slug === undefined) return env;
      // As for projects: compared with the row as locked, not as cached.
      const { updated, changed } = await store.transaction(async (s) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
        const fresh = (await s.projects.byId(project.id))!;
        const old = fresh.environments.find((e) => e.id === env.id);
        if (!old) throw new AppError('NOT_FOUND', `Environment with ID '${envId}' in project '${project.slug}' not found`);
        const changes: { name?: string; slug?: string } = {};
        if (name !== undefined && name !== old.name) changes.name = name;
        if (slug !== undefined && slug !== old.slug) changes.slug = slug;
        if (!changes.name && !changes.slug) return { updated: old, changed: false };
        if (changes.slug && fresh.environments.some((e) => e.slug === changes.slug)) {
          throw new AppError('BAD_REQUEST', `Environment with slug '${changes.slug}' already exists`);
        }
        const row = (await s.projects.updateEnvironment(env.id, changes))!;
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'update-environment',
          projectId: project.id,
          environment: row.slug,
          metadata: { environmentId: env.id, ...(changes.slug ? { oldSlug: old.slug } : {}), ...(changes.name ? { oldName: old.name, name: row.name } : {}) },
        });
        return { updated: row, changed: true };
      });
      if (!changed) return updated;
      await bus.publish(topics.project, project.id);
      await bus.publish(topics.environment, env.id);
      return updated;
    },

    async removeEnvironment(actor: Actor | SystemActor, ref: ProjectRef, envId: string, opts: ForceOptions = {}): Promise<EnvironmentRow> {
      const { project } = await access.authorize(actor, ref, 'project:admin');
      const env = environmentOf(project, envId);
      await store.transaction(async (s) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
        // The slug as locked, not as cached: the audit names what was deleted.
        const current = (await s.projects.byId(project.id))!.environments.find((e) => e.id === env.id);
        if (!current) throw new AppError('NOT_FOUND', `Environment with ID '${envId}' in project '${project.slug}' not found`);
        const secrets = await s.secrets.inventoryOfFolders(await s.folders.lockEnvironments([env.id]));
        refuseUnlessForced(secrets, opts, `Environment '${current.slug}'`);
        await s.projects.removeEnvironment(env.id);
        await auditCascade(s, actor, project.id, () => current.slug, secrets, 'delete-environment');
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'delete-environment',
          projectId: project.id,
          environment: current.slug,
          metadata: { environmentId: env.id, secretsDeleted: secrets.length },
        });
      });
      await bus.publish(topics.project, project.id);
      await bus.publish(topics.environment, env.id);
      return env;
    },

    /** The direct sub-folders of the folder at `path`. */
    async listFolders(actor: Actor | SystemActor, input: { project: ProjectRef; environment: string; path?: string }): Promise<FolderRow[]> {
      const { project } = await access.authorize(actor, input.project, 'secrets:read');
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.path);
      const folder = await store.folders.byPath(env.id, path);
      if (!folder) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);
      return store.folders.children(folder.id);
    },

    /**
     * Deletes the sub-folder of `path` named by id or name, with everything below it;
     * refused while that subtree holds secrets unless forced.
     */
    async deleteFolder(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; path?: string; folder: string } & ForceOptions,
    ): Promise<FolderRow> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const parentPath = normaliseSecretPath(input.path);
      const removed = await store.transaction(async (s) => {
        const { folder: target, subtree } = await childOf(s, env, parentPath, input.folder);
        const secrets = await s.secrets.inventoryOfFolders(subtree);
        refuseUnlessForced(secrets, input, `Folder '${target.path}'`);
        await s.folders.remove(target.id);
        await auditCascade(s, actor, project.id, () => env.slug, secrets, 'delete-folder');
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'delete-folder',
          projectId: project.id,
          environment: env.slug,
          secretPath: target.path,
          metadata: { folderId: target.id, secretsDeleted: secrets.length },
        });
        return target;
      });
      await bus.publish(topics.environment, env.id);
      return removed;
    },

    /** Creates the folder `name` under `parentPath`. */
    async createFolder(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; parentPath?: string; name: string },
    ): Promise<FolderView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const parentPath = normaliseSecretPath(input.parentPath);
      const name = validateFolderName(input.name);
      const path = parentPath === '/' ? `/${name}` : `${parentPath}/${name}`;
      normaliseSecretPath(path); // the depth limit
      const folder = await store.transaction(async (s) => {
        // Held: a rename or delete of the parent waits for this create, or it for them.
        const parent = await s.folders.byPathForWrite(env.id, parentPath);
        if (!parent) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${parentPath}' in environment '${env.slug}' not found`);
        if (await s.folders.byPath(env.id, path)) throw new AppError('BAD_REQUEST', `Folder '${path}' already exists`);
        const f = await s.folders.insert({ environmentId: env.id, parentId: parent.id, parentPath, name });
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'create-folder',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
        });
        return f;
      }).catch(takenMeanwhile(`Folder '${path}' already exists`));
      await bus.publish(topics.environment, env.id);
      return folderView(folder);
    },

    /**
     * Renames the sub-folder of `path` named by id or name; every folder below it moves
     * to the new prefix. Sealed values are bound to folder ids, not paths, so nothing is
     * re-encrypted; reads of the old paths answer 404 from the next request on.
     */
    async renameFolder(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; path?: string; folder: string; name: string },
    ): Promise<FolderView> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const parentPath = normaliseSecretPath(input.path);
      const name = validateFolderName(input.name);
      const newPath = parentPath === '/' ? `/${name}` : `${parentPath}/${name}`;
      const { folder, renamed } = await store.transaction(async (s) => {
        const root = await s.folders.byPath(env.id, '/');
        if (root && isUuid(input.folder) && input.folder.toLowerCase() === root.id) {
          throw new AppError('BAD_REQUEST', 'The root folder cannot be renamed');
        }
        const { folder: target } = await childOf(s, env, parentPath, input.folder);
        if (target.name === name) return { folder: target, renamed: false };
        if (await s.folders.byPath(env.id, newPath)) throw new AppError('BAD_REQUEST', `Folder '${newPath}' already exists`);
        // Every folder that moves must still be nameable by a path afterwards.
        const longest = Math.max(...(await s.folders.subtree(env.id, target.path)).map((f) => f.path.length));
        if (longest - target.path.length + newPath.length > MAX_PATH_LENGTH) {
          throw new AppError('VALIDATION', `Renamed, a folder below '${target.path}' would have a path longer than ${MAX_PATH_LENGTH} characters`);
        }
        const moved = await s.folders.renameSubtree(env.id, { id: target.id, name, oldPath: target.path, newPath });
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'update-folder',
          projectId: project.id,
          environment: env.slug,
          secretPath: newPath,
          metadata: { folderId: target.id, oldPath: target.path, newPath, foldersMoved: moved.length },
        });
        return { folder: moved.find((f) => f.id === target.id)!, renamed: true };
      }).catch(takenMeanwhile(`Folder '${newPath}' already exists`));
      if (renamed) await bus.publish(topics.environment, env.id);
      return folderView(folder);
    },
  };
}
export type ProjectsDomain = ReturnType<typeof projectsDomain>;
