// Folders inside an environment: list, create, rename (the subtree moves), delete (with
// what they hold).
import type { FolderRow } from '../../storage/folders.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { EnvironmentRow } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import { isUuid, maySecrets, requireSecrets, requireSecretsWrite, unrestrictedFor, type AccessControl, type Actor, type ProjectAccess, type ProjectRef, type SecretAction, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { removeWithSecrets, takenMeanwhile, type ForceOptions } from './cascade.js';
import { normaliseSecretPath } from './paths.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { folderNotFound } from './snapshots.js';

/** A folder as the folder routes answer it. */
export interface FolderView {
  id: string;
  name: string;
  path: string;
  parentId: string | null;
  environmentId: string;
  createdAt: Date;
  updatedAt: Date;
}

const folderView = (f: FolderRow): FolderView => ({
  id: f.id,
  name: f.name,
  path: f.path,
  parentId: f.parentId,
  environmentId: f.environmentId,
  createdAt: f.createdAt,
  updatedAt: f.updatedAt,
});

/** The longest path normaliseSecretPath accepts: a folder moved beyond it could not be named. */
const MAX_PATH_LENGTH = 1024;

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

const childPath = (parentPath: string, name: string) => (parentPath === '/' ? `/${name}` : `${parentPath}/${name}`);

/**
 * The direct sub-folder of `parentPath` named by id or name, with its whole subtree
 * locked (FOR UPDATE) for the rest of the transaction: nothing is added below it, and no
 * secret written into it, until the caller's change commits. A folder the caller may not
 * describe is "not found", exactly as a missing one (its name or id must not tell it exists).
 */
async function childOf(s: TxStores, env: EnvironmentRow, scope: ProjectAccess, parentPath: string, idOrName: string) {
  const notFound = () => new AppError('NOT_FOUND', `Folder '${idOrName}' in '${parentPath}' of environment '${env.slug}' not found`);
  const parent = await s.folders.byPath(env.id, parentPath);
  if (!parent) throw folderNotFound(parentPath, env);
  const children = await s.folders.children(parent.id);
  const folder = isUuid(idOrName) ? children.find((f) => f.id === idOrName.toLowerCase()) : children.find((f) => f.name === idOrName);
  if (!folder || !maySecrets(scope, 'describe', env.slug, folder.path)) throw notFound();
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

/**
 * The folder at `path` whose contents a listing describes (its sub-folders, its imports),
 * with the caller's read scope: 403 before the look-up when the caller may not describe
 * what is there (a folder outside the scope answers the same whether or not it exists),
 * then 404 when it does not exist.
 */
export async function folderToDescribe(
  access: Pick<AccessControl, 'authorize' | 'environment'>,
  folders: Pick<Store['folders'], 'byPath'>,
  actor: Actor | SystemActor,
  w: { project: ProjectRef; environment: string; path?: string },
) {
  const { project, access: scope } = await access.authorize(actor, w.project, 'secrets:read');
  const env = access.environment(project, w.environment);
  const path = normaliseSecretPath(w.path);
  requireSecrets(scope, 'describe', env.slug, path);
  const folder = await folders.byPath(env.id, path);
  if (!folder) throw folderNotFound(path, env);
  return { project, scope, env, path, folder };
}

export interface FoldersDeps {
  store: { folders: Pick<Store['folders'], 'byPath' | 'children' | 'subtree' | 'byIdWithProject'> };
  access: Pick<AccessControl, 'authorize' | 'environment'>;
  changes: Pick<WritePipeline, 'inProject'>;
}

interface Where {
  project: ProjectRef;
  environment: string;
  origin?: Origin;
}

export function foldersDomain(deps: FoldersDeps) {
  const { store, access, changes } = deps;

  async function writeTo(actor: Actor | SystemActor, w: Where) {
    const grant = await changes.inProject(actor, w.project, 'secrets:write', w.origin);
    return { grant, project: grant.project, env: access.environment(grant.project, w.environment) };
  }

  /** 403 unless `action` is allowed at every path given (a folder's whole subtree, when it moves or goes). */
  function requireAll(scope: ProjectAccess, action: SecretAction, env: EnvironmentRow, paths: readonly string[]) {
    for (const p of paths) requireSecrets(scope, action, env.slug, p);
  }

  return {
    /**
     * A folder by its id alone (Infisical's GET /api/v2/folders/:id). A folder that does
     * not exist, of a project the caller is not in, or outside what it may describe,
     * answers the same 404.
     */
    async get(actor: Actor | SystemActor, folderId: string): Promise<FolderView & { environmentSlug: string; projectId: string }> {
      const missing = new AppError('NOT_FOUND', `Folder with ID '${folderId.slice(0, 64)}' not found`);
      const row = isUuid(folderId) ? await store.folders.byIdWithProject(folderId.toLowerCase()) : undefined;
      if (!row) throw missing;
      let authorized;
      try {
        authorized = await access.authorize(actor, { id: row.projectId }, 'secrets:read');
      } catch (err) {
        if (err instanceof AppError && (err.code === 'FORBIDDEN' || err.code === 'NOT_FOUND')) throw missing;
        throw err;
      }
      const env = authorized.project.environments.find((e) => e.id === row.environmentId);
      if (!env || !maySecrets(authorized.access, 'describe', env.slug, row.path)) throw missing;
      return { ...folderView(row), environmentSlug: env.slug, projectId: row.projectId };
    },

    /** The direct sub-folders of the folder at `path`, or with `recursive` every folder below it. */
    async list(actor: Actor | SystemActor, input: { project: ProjectRef; environment: string; path?: string; recursive?: boolean }): Promise<FolderRow[]> {
      const { scope, env, path, folder } = await folderToDescribe(access, store.folders, actor, input);
      // Folders outside the caller's scope are neither listed nor counted.
      const found = input.recursive ? (await store.folders.subtree(env.id, path)).filter((f) => f.id !== folder.id) : await store.folders.children(folder.id);
      return unrestrictedFor(scope, 'describe') ? found : found.filter((f) => maySecrets(scope, 'describe', env.slug, f.path));
    },

    /** Creates the folder `name` under `parentPath`. */
    async create(actor: Actor | SystemActor, input: Where & { parentPath?: string; name: string }): Promise<FolderView> {
      const { grant, project, env } = await writeTo(actor, input);
      const parentPath = normaliseSecretPath(input.parentPath);
      const name = validateFolderName(input.name);
      const path = childPath(parentPath, name);
      normaliseSecretPath(path); // the depth limit
      requireSecretsWrite(grant.access, 'create', env.slug, path);
      const folder = await grant
        .run(async ({ s, audit, invalidate }) => {
          // Held: a rename or delete of the parent waits for this create, or it for them.
          const parent = await s.folders.byPathForWrite(env.id, parentPath);
          if (!parent) throw folderNotFound(parentPath, env);
          if (await s.folders.byPath(env.id, path)) throw new AppError('BAD_REQUEST', `Folder '${path}' already exists`);
          const f = await s.folders.insert({ environmentId: env.id, parentId: parent.id, parentPath, name });
          await audit({ eventType: 'create-folder', projectId: project.id, environment: env.slug, secretPath: path });
          invalidate(topics.environment, env.id);
          return f;
        })
        .catch(takenMeanwhile(`Folder '${path}' already exists`));
      return folderView(folder);
    },

    /**
     * Renames the sub-folder of `path` named by id or name; every folder below it moves
     * to the new prefix. Sealed values are bound to folder ids, not paths, so nothing is
     * re-encrypted; reads of the old paths answer 404 from the next request on.
     */
    async rename(actor: Actor | SystemActor, input: Where & { path?: string; folder: string; name: string }): Promise<FolderView> {
      const { grant, project, env } = await writeTo(actor, input);
      const parentPath = normaliseSecretPath(input.path);
      const name = validateFolderName(input.name);
      const newPath = childPath(parentPath, name);
      // Where it is named and where it goes, before anything is looked up.
      requireSecretsWrite(grant.access, 'edit', env.slug, parentPath);
      requireSecretsWrite(grant.access, 'edit', env.slug, newPath);
      const folder = await grant
        .run(async ({ s, audit, invalidate }) => {
          const root = await s.folders.byPath(env.id, '/');
          if (root && isUuid(input.folder) && input.folder.toLowerCase() === root.id) {
            throw new AppError('BAD_REQUEST', 'The root folder cannot be renamed');
          }
          const { folder: target } = await childOf(s, env, grant.access, parentPath, input.folder);
          // Every folder that moves is edited where it was and where it goes.
          const moving = (await s.folders.subtree(env.id, target.path)).map((f) => f.path);
          requireAll(grant.access, 'edit', env, [...moving, ...moving.map((p) => newPath + p.slice(target.path.length))]);
          if (target.name === name) return target;
          if (await s.folders.byPath(env.id, newPath)) throw new AppError('BAD_REQUEST', `Folder '${newPath}' already exists`);
          // Every folder that moves must still be nameable by a path afterwards.
          const longest = Math.max(...moving.map((p) => p.length));
          if (longest - target.path.length + newPath.length > MAX_PATH_LENGTH) {
            throw new AppError('VALIDATION', `Renamed, a folder below '${target.path}' would have a path longer than ${MAX_PATH_LENGTH} characters`);
          }
          const moved = await s.folders.renameSubtree(env.id, { id: target.id, name, oldPath: target.path, newPath });
          await audit({
            eventType: 'update-folder',
            projectId: project.id,
            environment: env.slug,
            secretPath: newPath,
            metadata: { folderId: target.id, oldPath: target.path, newPath, foldersMoved: moved.length },
          });
          invalidate(topics.environment, env.id);
          return moved.find((f) => f.id === target.id)!;
        })
        .catch(takenMeanwhile(`Folder '${newPath}' already exists`));
      return folderView(folder);
    },

    /**
     * Deletes the sub-folder of `path` named by id or name, with everything below it;
     * refused while that subtree holds secrets unless forced.
     */
    async remove(actor: Actor | SystemActor, input: Where & { path?: string; folder: string } & ForceOptions): Promise<FolderRow> {
      const { grant, project, env } = await writeTo(actor, input);
      const parentPath = normaliseSecretPath(input.path);
      requireSecretsWrite(grant.access, 'delete', env.slug, parentPath);
      return grant.run(async ({ s, audit, invalidate }) => {
        const { folder: target, subtree } = await childOf(s, env, grant.access, parentPath, input.folder);
        // Everything below goes too.
        requireAll(grant.access, 'delete', env, (await s.folders.subtree(env.id, target.path)).map((f) => f.path));
        await removeWithSecrets(audit, {
          secrets: await s.secrets.inventoryOfFolders(subtree),
          opts: input,
          what: `Folder '${target.path}'`,
          remove: () => s.folders.remove(target.id),
          entry: { eventType: 'delete-folder', projectId: project.id, environment: env.slug, secretPath: target.path, metadata: { folderId: target.id } },
        });
        invalidate(topics.environment, env.id);
        return target;
      });
    },
  };
}
export type FoldersDomain = ReturnType<typeof foldersDomain>;
