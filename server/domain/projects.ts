// Projects: a data key of their own, and the default environments.
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { CacheBus } from '../../storage/cache.js';
import type { Store } from '../../storage/index.js';
import type { ProjectRecord } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import { auditActor, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { dataKeyAad } from './keyring.js';
import { normaliseSecretPath } from './paths.js';

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
      const name = input.name.trim();
      if (name.length < 1 || name.length > 64) throw new AppError('VALIDATION', 'projectName must be 1 to 64 characters');
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
      });
      await bus.publish(topics.projectSlug, slug);
      return (await store.projects.byId(id))!;
    },

    /** Creates the folder `name` under `parentPath`. */
    async createFolder(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; parentPath?: string; name: string },
    ): Promise<{ id: string; path: string }> {
      const { project } = await access.authorize(actor, input.project, 'secrets:write');
      const env = access.environment(project, input.environment);
      const parentPath = normaliseSecretPath(input.parentPath);
      const path = normaliseSecretPath(parentPath === '/' ? `/${input.name}` : `${parentPath}/${input.name}`);
      if (path.split('/').length !== parentPath.split('/').length + (parentPath === '/' ? 0 : 1)) {
        throw new AppError('VALIDATION', 'Folder name must be a single path segment');
      }
      const folder = await store.transaction(async (s) => {
        const parent = await s.folders.byPath(env.id, parentPath);
        if (!parent) throw new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${parentPath}' in environment '${env.slug}' not found`);
        if (await s.folders.byPath(env.id, path)) throw new AppError('BAD_REQUEST', `Folder '${path}' already exists`);
        const f = await s.folders.insert({ environmentId: env.id, parentId: parent.id, parentPath, name: input.name });
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: 'create-folder',
          projectId: project.id,
          environment: env.slug,
          secretPath: path,
        });
        return f;
      });
      await bus.publish(topics.environment, env.id);
      return { id: folder.id, path: folder.path };
    },
  };
}
export type ProjectsDomain = ReturnType<typeof projectsDomain>;
