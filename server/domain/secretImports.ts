// Secret imports: a folder that also answers the secrets of other folders of the same
// project (another environment and/or path), in order. This module keeps the list of
// imports (create, list, move, re-point, delete); reading through them is secrets.ts's
// (`imports`, and the single read's fallback), which opens their values with the rest.
import type { Store, TxStores } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { ImportEdge, SecretImportRow } from '../../storage/secretImports.js';
import { AppError } from '../errors.js';
import { isUuid, mayReadSecrets, requireSecretsWrite, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics, type Caches } from './caches.js';
import { normaliseSecretPath } from './paths.js';
import type { Origin, ProjectGrant, WritePipeline } from './pipeline.js';
import { folderToDescribe } from './folders.js';
import { folderForWrite } from './secrets.js';
import { folderNotFound } from './snapshots.js';

/** Most imports one folder may hold. */
export const MAX_IMPORTS_PER_FOLDER = 100;

/** An import as Infisical answers it (`importEnv` expanded to the environment). */
export interface SecretImportView {
  id: string;
  folderId: string;
  importPath: string;
  importEnv: { id: string; name: string; slug: string };
  position: number;
  createdAt: Date;
  updatedAt: Date;
}

export function importView(project: ProjectRecord, r: SecretImportRow): SecretImportView {
  // The source environment is in the project (its deletion deletes the import).
  const env = project.environments.find((e) => e.id === r.importEnvId) ?? { id: r.importEnvId, name: '', slug: '' };
  return {
    id: r.id,
    folderId: r.folderId,
    importPath: r.importPath,
    importEnv: { id: env.id, name: env.name, slug: env.slug },
    position: r.position,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

const node = (environmentId: string, path: string) => `${environmentId}\u0000${path}`;

/**
 * Whether importing `source` into `target` would close a cycle: the source already reads
 * (directly or through its own imports) the target. `without` is an import being
 * re-pointed (its old edge no longer counts).
 */
export function closesCycle(edges: readonly ImportEdge[], target: { environmentId: string; path: string }, source: { environmentId: string; path: string }, without?: string): boolean {
  const goal = node(target.environmentId, target.path);
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (e.id === without) continue;
    const from = node(e.environmentId, e.path);
    const list = next.get(from) ?? [];
    list.push(node(e.importEnvId, e.importPath));
    next.set(from, list);
  }
  const seen = new Set<string>();
  const queue = [node(source.environmentId, source.path)];
  while (queue.length > 0) {
    const at = queue.pop()!;
    if (at === goal) return true;
    if (seen.has(at)) continue;
    seen.add(at);
    queue.push(...(next.get(at) ?? []));
  }
  return false;
}

export interface SecretImportsDeps {
  store: { secretImports: Pick<Store['secretImports'], 'byFolder'>; folders: Pick<Store['folders'], 'byPath'> };
  access: Pick<AccessControl, 'authorize' | 'environment'>;
  changes: Pick<WritePipeline, 'inProject'>;
  caches: Pick<Caches, 'imports'>;
}

/** Where an import request points: the folder whose imports it reads or changes. */
interface Where {
  project: ProjectRef;
  environment: string;
  path?: string;
  origin?: Origin;
}

interface Source {
  environment: string;
  path: string;
}

const importNotFound = (id: string) => new AppError('NOT_FOUND', `Secret import with ID '${id}' not found`);

export function secretImportsDomain(deps: SecretImportsDeps) {
  const { store, access, changes, caches } = deps;

  async function writeTo(actor: Actor | SystemActor, w: Where) {
    const grant = await changes.inProject(actor, w.project, 'secrets:write', w.origin);
    const env = access.environment(grant.project, w.environment);
    const path = normaliseSecretPath(w.path);
    // An import changes what the folder answers: as editing its secrets.
    requireSecretsWrite(grant.access, 'edit', env.slug, path);
    return { grant, project: grant.project, env, path };
  }

  /** The source an import names, checked before any transaction: 404 environment, 403 unreadable, 422 path. */
  function sourceOf(grant: ProjectGrant, s: Source): { env: EnvironmentRow; path: string } {
    const env = access.environment(grant.project, s.environment);
    const path = normaliseSecretPath(s.path);
    if (!mayReadSecrets(grant.access, env.slug, path)) throw new AppError('FORBIDDEN', 'You are not allowed to read the secrets of the folder to import');
    return { env, path };
  }

  /** Inside the transaction: the source exists, is not the folder itself, is not imported twice, closes no cycle. */
  async function checkSource(
    s: TxStores,
    project: ProjectRecord,
    target: { env: EnvironmentRow; path: string; folderId: string },
    source: { env: EnvironmentRow; path: string },
    replacing?: string,
  ) {
    if (!(await s.folders.byPath(source.env.id, source.path))) throw folderNotFound(source.path, source.env);
    if (source.env.id === target.env.id && source.path === target.path) {
      throw new AppError('VALIDATION', 'A folder cannot import itself');
    }
    const existing = await s.secretImports.byFolder(target.folderId);
    if (existing.some((r) => r.id !== replacing && r.importEnvId === source.env.id && r.importPath === source.path)) {
      throw new AppError('BAD_REQUEST', `Folder '${source.path}' of environment '${source.env.slug}' is already imported here`);
    }
    const edges = await s.secretImports.edgesOfProject(project.id);
    if (closesCycle(edges, { environmentId: target.env.id, path: target.path }, { environmentId: source.env.id, path: source.path }, replacing)) {
      throw new AppError(
        'VALIDATION',
        `Cyclic import: folder '${source.path}' of environment '${source.env.slug}' already imports '${target.path}' of '${target.env.slug}' (directly or through its imports)`,
      );
    }
    return existing;
  }

  /** The import `id` of the folder, inside the transaction (404 when it is another folder's). */
  async function importOf(s: TxStores, folderId: string, id: string) {
    if (!isUuid(id)) throw importNotFound(id);
    const row = await s.secretImports.byId(id.toLowerCase());
    if (!row || row.folderId !== folderId) throw importNotFound(id);
    return row;
  }

  const auditFields = (project: ProjectRecord, env: EnvironmentRow, path: string) => ({ projectId: project.id, environment: env.slug, secretPath: path });

  return {
    /** The imports of the folder at `path`, in order (cached; dropped with the environment's folders). */
    async ofFolder(env: EnvironmentRow, folderId: string): Promise<SecretImportRow[]> {
      return caches.imports.get(`${env.id}:${folderId}`, () => store.secretImports.byFolder(folderId));
    },

    async list(actor: Actor | SystemActor, w: Where): Promise<SecretImportView[]> {
      const { project, scope, folder } = await folderToDescribe(access, store.folders, actor, w);
      const rows = await store.secretImports.byFolder(folder.id);
      // As the lists (include_imports): an import whose source the caller may not read is
      // left out entirely (its path names a folder outside the scope), and the positions
      // shown are renumbered so they do not count the hidden ones either.
      const env0 = (id: string) => project.environments.find((e) => e.id === id);
      const visible = rows.filter((r) => {
        const src = env0(r.importEnvId);
        return src !== undefined && mayReadSecrets(scope, src.slug, r.importPath);
      });
      if (visible.length === rows.length) return rows.map((r) => importView(project, r));
      return visible.map((r, i) => ({ ...importView(project, r), position: i + 1 }));
    },

    async create(actor: Actor | SystemActor, input: Where & { import: Source }): Promise<SecretImportView> {
      const { grant, project, env, path } = await writeTo(actor, input);
      const source = sourceOf(grant, input.import);
      const row = await grant.run(async ({ s, audit, invalidate }) => {
        await s.secretImports.lockProject(project.id);
        const folder = await folderForWrite(s, env, path);
        const existing = await checkSource(s, project, { env, path, folderId: folder.id }, source);
        if (existing.length >= MAX_IMPORTS_PER_FOLDER) throw new AppError('VALIDATION', `A folder may hold at most ${MAX_IMPORTS_PER_FOLDER} imports`);
        const inserted = await s.secretImports.insert({ folderId: folder.id, importEnvId: source.env.id, importPath: source.path });
        await audit({
          eventType: 'create-secret-import',
          ...auditFields(project, env, path),
          metadata: { secretImportId: inserted.id, folderId: folder.id, importFromEnvironment: source.env.slug, importFromSecretPath: source.path },
        });
        invalidate(topics.environment, env.id);
        return inserted;
      });
      return importView(project, row);
    },

    /** Moves an import to `position` (1 = first) and/or points it at another folder. */
    async update(actor: Actor | SystemActor, input: Where & { id: string; import: Partial<Source> & { position?: number } }): Promise<SecretImportView> {
      const { grant, project, env, path } = await writeTo(actor, input);
      const changesSource = input.import.environment !== undefined || input.import.path !== undefined;
      const row = await grant.run(async ({ s, audit, invalidate }) => {
        await s.secretImports.lockProject(project.id);
        const folder = await folderForWrite(s, env, path);
        const cur = await importOf(s, folder.id, input.id);
        if (changesSource) {
          const curEnv = project.environments.find((e) => e.id === cur.importEnvId);
          const source = sourceOf(grant, { environment: input.import.environment ?? curEnv?.slug ?? '', path: input.import.path ?? cur.importPath });
          await checkSource(s, project, { env, path, folderId: folder.id }, source, cur.id);
          await s.secretImports.setSource(cur.id, source.env.id, source.path);
        }
        if (input.import.position !== undefined) {
          const all = await s.secretImports.byFolder(folder.id);
          if (input.import.position < 1 || input.import.position > all.length) {
            throw new AppError('VALIDATION', `position must be between 1 and ${all.length} (the folder's imports)`);
          }
          const order = all.map((r) => r.id).filter((id) => id !== cur.id);
          order.splice(input.import.position - 1, 0, cur.id);
          await s.secretImports.renumber(order);
        }
        const updated = (await s.secretImports.byId(cur.id))!;
        await audit({
          eventType: 'update-secret-import',
          ...auditFields(project, env, path),
          metadata: {
            secretImportId: cur.id,
            folderId: folder.id,
            position: updated.position,
            importFromSecretPath: updated.importPath,
            importFromEnvironment: project.environments.find((e) => e.id === updated.importEnvId)?.slug ?? null,
          },
        });
        invalidate(topics.environment, env.id);
        return updated;
      });
      return importView(project, row);
    },

    async remove(actor: Actor | SystemActor, input: Where & { id: string }): Promise<SecretImportView> {
      const { grant, project, env, path } = await writeTo(actor, input);
      const row = await grant.run(async ({ s, audit, invalidate }) => {
        await s.secretImports.lockProject(project.id);
        const folder = await folderForWrite(s, env, path);
        const cur = await importOf(s, folder.id, input.id);
        await s.secretImports.remove(cur.id);
        await s.secretImports.renumber((await s.secretImports.byFolder(folder.id)).map((r) => r.id));
        const sourceEnv = project.environments.find((e) => e.id === cur.importEnvId);
        await audit({
          eventType: 'delete-secret-import',
          ...auditFields(project, env, path),
          metadata: { secretImportId: cur.id, folderId: folder.id, importFromEnvironment: sourceEnv?.slug ?? null, importFromSecretPath: cur.importPath },
        });
        invalidate(topics.environment, env.id);
        return cur;
      });
      return importView(project, row);
    },
  };
}
export type SecretImportsDomain = ReturnType<typeof secretImportsDomain>;
