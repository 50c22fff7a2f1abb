// Who may do what: the project an actor names is resolved first (404), then the
// actor's role in it is checked (403), as Infisical orders them.
import type { Store } from '../../storage/index.js';
import type { Role } from '../../storage/memberships.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import type { Caches } from './caches.js';

export type Actor = { kind: 'identity'; identityId: string } | { kind: 'user'; userId: string; superadmin?: boolean; sessionId?: string };
/** The service itself (start-up, CLI, tests' set-up): not subject to roles, still audited. */
export type SystemActor = { kind: 'system' };
export const SYSTEM: SystemActor = { kind: 'system' };

/** Who an audit entry names. */
export interface AuditActor {
  actorType: 'user' | 'identity' | 'system';
  actorId: string | null;
}

export function auditActor(actor: Actor | SystemActor): AuditActor {
  if (actor.kind === 'identity') return { actorType: 'identity', actorId: actor.identityId };
  if (actor.kind === 'user') return { actorType: 'user', actorId: actor.userId };
  return { actorType: 'system', actorId: null };
}

/** Only the superadmin (and the service itself) administers the organization. */
export function requireOrgAdmin(actor: Actor | SystemActor): void {
  if (actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin)) return;
  throw new AppError('FORBIDDEN', 'You are not allowed to access this resource');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

export type Permission = 'secrets:read' | 'secrets:write' | 'project:admin';

const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(['secrets:read', 'secrets:write', 'project:admin']),
  member: new Set(['secrets:read', 'secrets:write']),
  viewer: new Set(['secrets:read']),
  'no-access': new Set(),
};

export const can = (role: Role, p: Permission) => GRANTS[role].has(p);

export type ProjectRef = { slug: string } | { id: string };

/**
 * Whether the holder of `grant` (as authorize answered it) may read the secrets of
 * `environment` at `secretPath`. Every read that reaches into another folder than the one
 * the request named (imports) asks here, and only here.
 */
export function mayReadSecrets(grant: { role: Role }, _environment: string, _secretPath: string): boolean {
  return can(grant.role, 'secrets:read');
}

export function accessControl(deps: { store: Pick<Store, 'projects' | 'memberships'>; caches: Pick<Caches, 'projects' | 'roles'> }) {
  const { store, caches } = deps;

  async function project(ref: ProjectRef): Promise<ProjectRecord> {
    const found =
      'slug' in ref
        ? await caches.projects.get(`slug:${ref.slug}`, async () => (await store.projects.bySlug(ref.slug)) ?? null)
        : await caches.projects.get(`id:${ref.id}`, async () =>
            isUuid(ref.id) ? ((await store.projects.byId(ref.id.toLowerCase())) ?? null) : null,
          );
    if (!found) {
      throw new AppError(
        'NOT_FOUND',
        'slug' in ref ? `Project with slug '${ref.slug}' not found` : `Project with ID '${ref.id}' not found`,
      );
    }
    return found;
  }

  async function roleOf(projectId: string, actor: Actor): Promise<Role | null> {
    const id = actor.kind === 'identity' ? actor.identityId : actor.userId;
    return caches.roles.get(`${projectId}:${actor.kind}:${id}`, async () => {
      const role =
        actor.kind === 'identity'
          ? await store.memberships.roleOfIdentity(projectId, id)
          : await store.memberships.roleOfUser(projectId, id);
      return role ?? null;
    });
  }

  return {
    project,
    roleOf,
    /** Resolves the project and demands `permission` in it. */
    async authorize(actor: Actor | SystemActor, ref: ProjectRef, permission: Permission): Promise<{ project: ProjectRecord; role: Role }> {
      const p = await project(ref);
      // The instance's superadmin administers every project.
      if (actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin)) return { project: p, role: 'admin' };
      const role = await roleOf(p.id, actor);
      if (!role) throw new AppError('FORBIDDEN', 'You are not allowed to access this resource');
      if (!can(role, permission)) throw new AppError('FORBIDDEN', 'You are not allowed to access this resource');
      return { project: p, role };
    },

    environment(project: ProjectRecord, slug: string): EnvironmentRow {
      const env = project.environments.find((e) => e.slug === slug);
      if (!env) throw new AppError('NOT_FOUND', `Environment with slug '${slug}' in project '${project.slug}' not found`);
      return env;
    },
  };
}
export type AccessControl = ReturnType<typeof accessControl>;
