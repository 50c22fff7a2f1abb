// Projects: a data key of their own, and the default environments.
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord, ProjectRow } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import { auditActor, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { auditCascade, refuseUnlessForced, takenMeanwhile, type ForceOptions } from './cascade.js';
import { dataKeyAad } from './keyring.js';
import { MEMBERSHIP_EVENTS } from './memberships.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { validateName } from './text.js';

export type { ForceOptions } from './cascade.js';

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

export const projectGone = (id: string) => new AppError('NOT_FOUND', `Project with ID '${id}' not found`);

export interface ProjectsDeps {
  store: { projects: Pick<Store['projects'], 'byId' | 'listWithEnvironments'> };
  crypto: Pick<Crypto, 'generateDataKey' | 'rootKeyVersion'>;
  access: Pick<AccessControl, 'authorize'>;
  changes: Pick<WritePipeline, 'inProject' | 'byCaller'>;
}

export function projectsDomain(deps: ProjectsDeps) {
  const { store, crypto, access, changes } = deps;
  return {
    /**
     * A new project with its own data key; the person who creates it is its admin. It
     * gets the default environments (dev, staging, prod) unless `defaultEnvironments` is
     * false (Infisical's shouldCreateDefaultEnvs), then none.
     */
    async create(actor: Actor | SystemActor, input: { name: string; slug?: string; defaultEnvironments?: boolean; origin?: Origin }): Promise<ProjectRecord> {
      // Projects belong to people; a machine identity only ever works inside one it was given.
      if (actor.kind === 'identity') throw new AppError('FORBIDDEN', 'Machine identities may not create projects');
      // The same rule as a rename: control characters (a NUL cannot even be stored) are refused.
      const name = validateName(input.name, 'projectName');
      const slug = validateSlug(input.slug?.trim() || slugify(name));
      const keyId = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(keyId));
      // Any person may create a project (and becomes its admin): the grant is the caller's own.
      const id = await changes
        .byCaller(auditActor(actor), input.origin)
        .run(async ({ s, audit, invalidate }) => {
          if (await s.projects.bySlug(slug)) throw new AppError('BAD_REQUEST', `A project with slug '${slug}' already exists`);
          const org = await s.organizations.ensureDefault();
          await s.keys.insert({ id: keyId, purpose: 'project', rootKeyVersion: crypto.rootKeyVersion, wrapped });
          const projectId = await s.projects.insert({ orgId: org.id, name, slug, dataKeyId: keyId });
          for (const [position, e] of (input.defaultEnvironments === false ? [] : DEFAULT_ENVIRONMENTS).entries()) {
            await s.projects.insertEnvironment({ projectId, name: e.name, slug: e.slug, position });
          }
          if (actor.kind === 'user') await s.memberships.upsertUser(projectId, actor.userId, 'admin');
          await audit({ eventType: 'create-project', projectId, metadata: { slug, ...(input.defaultEnvironments === false ? { defaultEnvironments: false } : {}) } });
          // A "not found" for this slug may be cached.
          invalidate(topics.projectSlug, slug);
          return projectId;
        })
        .catch(takenMeanwhile(`A project with slug '${slug}' already exists`));
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
    async update(actor: Actor | SystemActor, ref: ProjectRef, input: { name?: string; slug?: string }, origin?: Origin): Promise<ProjectRecord> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      const slug = input.slug === undefined ? undefined : validateSlug(input.slug.trim());
      if (name === undefined && slug === undefined) return project;
      // Compared with the row as locked, not as cached: a concurrent change may have come
      // first (the same change twice is then a no-op, and the audit names the real old values).
      const { old, changed } = await grant
        .run(async ({ s, audit, invalidate }) => {
          if (!(await s.projects.lockForUpdate(project.id))) throw projectGone(project.id);
          const old = (await s.projects.byId(project.id))!;
          const changes: { name?: string; slug?: string } = {};
          if (name !== undefined && name !== old.name) changes.name = name;
          if (slug !== undefined && slug !== old.slug) changes.slug = slug;
          if (!changes.name && !changes.slug) return { old, changed: false };
          if (changes.slug && (await s.projects.bySlug(changes.slug))) {
            throw new AppError('BAD_REQUEST', `A project with slug '${changes.slug}' already exists`);
          }
          await s.projects.update(project.id, changes);
          await audit({
            eventType: 'update-project',
            projectId: project.id,
            metadata: { ...(changes.slug ? { oldSlug: old.slug, slug: changes.slug } : {}), ...(changes.name ? { oldName: old.name, name: changes.name } : {}) },
          });
          invalidate(topics.project, project.id);
          invalidate(topics.projectSlug, old.slug);
          if (changes.slug) invalidate(topics.projectSlug, changes.slug);
          return { old, changed: true };
        })
        .catch(takenMeanwhile(`A project with slug '${slug}' already exists`));
      if (!changed) return old;
      return (await store.projects.byId(project.id))!;
    },

    /**
     * Deletes the project with everything in it; refused while it holds secrets unless
     * forced. Every secret and membership it takes along gets its own audit entry.
     */
    async remove(actor: Actor | SystemActor, ref: ProjectRef, opts: ForceOptions = {}, origin?: Origin): Promise<ProjectRecord> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      await grant.run(async ({ s, audit, invalidate }) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw projectGone(project.id);
        const fresh = (await s.projects.byId(project.id))!;
        const folders = await s.folders.lockEnvironments(fresh.environments.map((e) => e.id));
        const secrets = await s.secrets.inventoryOfFolders(folders);
        refuseUnlessForced(secrets, opts, `Project '${project.slug}'`);
        // Read before the cascade removes them; the project lock keeps new ones out meanwhile.
        const members = [...(await s.memberships.list(project.id, 'identity')), ...(await s.memberships.list(project.id, 'user'))];
        await s.projects.remove(project.id);
        const slugs = new Map(fresh.environments.map((e) => [e.id, e.slug]));
        await auditCascade(audit, project.id, (id) => slugs.get(id)!, secrets, 'delete-project');
        for (const m of members) {
          const kind = m.identityId ? 'identity' : 'user';
          await audit({
            eventType: MEMBERSHIP_EVENTS[kind].remove,
            projectId: project.id,
            metadata: { [`${kind}Id`]: (m.identityId ?? m.userId)!, role: m.role, cascade: 'delete-project' },
          });
        }
        await audit({
          eventType: 'delete-project',
          projectId: project.id,
          metadata: { slug: project.slug, name: project.name, secretsDeleted: secrets.length, membershipsDeleted: members.length },
        });
        invalidate(topics.project, project.id);
        invalidate(topics.projectSlug, project.slug);
        for (const e of project.environments) invalidate(topics.environment, e.id);
      });
      return project;
    },
  };
}
export type ProjectsDomain = ReturnType<typeof projectsDomain>;

