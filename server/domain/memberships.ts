// Who is in a project with which role: identities and users. Project admins (a member
// with the admin role, or the superadmin) manage them. A change is one transaction with
// its audit entry; after the commit the cached role is dropped on every replica, so the
// member's very next request sees the new role.
import type { Store } from '../../storage/index.js';
import { ROLES, type MemberKind, type MembershipRole, type MembershipView, type Role } from '../../storage/memberships.js';
import { AppError } from '../errors.js';
import { isUuid, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { existingIdentity } from './identities.js';
import type { Change, Origin, WritePipeline } from './pipeline.js';

export interface MembershipsDeps {
  store: { memberships: Pick<Store['memberships'], 'get' | 'list'> };
  access: Pick<AccessControl, 'authorize'>;
  changes: Pick<WritePipeline, 'inProject'>;
}

export interface MemberRef {
  kind: MemberKind;
  id: string;
}

// Infisical's event names where it has them.
export const MEMBERSHIP_EVENTS = {
  identity: { add: 'add-identity-to-project', update: 'update-identity-project-membership', remove: 'remove-identity-from-project' },
  user: { add: 'add-workspace-member', update: 'update-user-workspace-role', remove: 'remove-workspace-member' },
} as const;

const noun = (kind: MemberKind) => (kind === 'identity' ? 'Identity' : 'User');

const ROLE_MESSAGE = `role must be one of ${ROLES.join(', ')} or the slug of one of the project's custom roles`;

/** A role name that could name a role at all (checked before the project is looked up). */
function checkRole(role: string): void {
  if (role === '' || role.length > 64 || role === 'custom') throw new AppError('VALIDATION', ROLE_MESSAGE);
}

/** The built-in role, or the project's custom role with that slug (422 when neither). */
async function resolveRole(s: { projectRoles: Pick<Store['projectRoles'], 'bySlug'> }, projectId: string, slug: string): Promise<{ role: MembershipRole; customRoleId: string | null }> {
  if ((ROLES as readonly string[]).includes(slug)) return { role: slug as Role, customRoleId: null };
  const custom = await s.projectRoles.bySlug(projectId, slug);
  if (!custom) throw new AppError('VALIDATION', ROLE_MESSAGE);
  return { role: 'custom', customRoleId: custom.id };
}

/** The role as the audit trail and the contract's `role` name it: a built-in role, or the custom role's slug. */
const roleName = (m: Pick<MembershipView, 'role' | 'customRoleSlug'>) => (m.role === 'custom' ? (m.customRoleSlug ?? 'custom') : m.role);

export function membershipsDomain(deps: MembershipsDeps) {
  const { store, access, changes } = deps;

  const admin = (actor: Actor | SystemActor, project: ProjectRef) => access.authorize(actor, project, 'project:admin');

  /** A malformed id names nobody: 404, as an unknown one. */
  function memberId(member: MemberRef): string {
    if (!isUuid(member.id)) throw notMember(member);
    return member.id.toLowerCase();
  }

  const notMember = (member: MemberRef, projectId?: string) =>
    new AppError(
      'NOT_FOUND',
      projectId
        ? `${noun(member.kind)} with ID '${member.id}' is not a member of project with ID '${projectId}'`
        : `${noun(member.kind)} with ID '${member.id}' not found`,
    );

  /** The member's cached role (or "not a member") is dropped on every replica after the commit. */
  const invalidateRole = (c: Pick<Change, 'invalidate'>, projectId: string, member: MemberRef, id: string) =>
    c.invalidate(topics.membership, `${projectId}:${member.kind}:${id}`);

  /** A change to one member's role: the project admin's grant, and who. */
  async function memberChange(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef }, origin?: Origin) {
    const grant = await changes.inProject(actor, input.project, 'project:admin', origin);
    return { grant, project: grant.project, member: input.member, id: memberId(input.member) };
  }

  async function loadView(s: { memberships: Pick<Store['memberships'], 'get'> }, projectId: string, member: MemberRef, id: string): Promise<MembershipView> {
    const view = await s.memberships.get(projectId, member.kind, id);
    if (!view) throw notMember(member, projectId);
    return view;
  }

  return {
    async add(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string }, origin?: Origin): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const { grant, project, member, id } = await memberChange(actor, input, origin);
      return grant.run(async (c) => {
        const { s, audit } = c;
        const resolved = await resolveRole(s, project.id, role);
        const exists = member.kind === 'identity' ? await s.identities.byId(id) : await s.users.byId(id);
        if (!exists) throw notMember(member);
        if (await s.memberships.get(project.id, member.kind, id)) {
          throw new AppError('BAD_REQUEST', `${noun(member.kind)} with ID '${id}' already exists in project with ID '${project.id}'`);
        }
        await s.memberships.insert(project.id, member.kind, id, resolved.role, resolved.customRoleId);
        await audit({ eventType: MEMBERSHIP_EVENTS[member.kind].add, projectId: project.id, metadata: { [`${member.kind}Id`]: id, role } });
        // A "not a member" answer may be cached for it.
        invalidateRole(c, project.id, member, id);
        return loadView(s, project.id, member, id);
      });
    },

    /**
     * Creates or changes an identity's role in one step (the service's own set-up and the
     * CLI use it; the API adds and changes separately, as Infisical does).
     */
    async upsertIdentity(actor: Actor | SystemActor, input: { project: ProjectRef; identityId: string; role: Role }, origin?: Origin) {
      if (!ROLES.includes(input.role)) throw new AppError('VALIDATION', `role must be one of ${ROLES.join(', ')}`);
      const grant = await changes.inProject(actor, input.project, 'project:admin', origin);
      const { project } = grant;
      return grant.run(async (c) => {
        const identity = await existingIdentity(c.s, input.identityId);
        const m = await c.s.memberships.upsertIdentity(project.id, identity.id, input.role);
        await c.audit({ eventType: 'set-identity-project-role', projectId: project.id, metadata: { identityId: identity.id, role: input.role } });
        invalidateRole(c, project.id, { kind: 'identity', id: identity.id }, identity.id);
        return m;
      });
    },

    async get(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef }): Promise<MembershipView> {
      const { project } = await admin(actor, input.project);
      return loadView(store, project.id, input.member, memberId(input.member));
    },

    async list(actor: Actor | SystemActor, input: { project: ProjectRef; kind: MemberKind }): Promise<MembershipView[]> {
      const { project } = await admin(actor, input.project);
      return store.memberships.list(project.id, input.kind);
    },

    async setRole(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string }, origin?: Origin): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const { grant, project, member, id } = await memberChange(actor, input, origin);
      return grant.run(async (c) => {
        const before = await loadView(c.s, project.id, member, id);
        const resolved = await resolveRole(c.s, project.id, role);
        await c.s.memberships.updateRole(project.id, member.kind, id, resolved.role, resolved.customRoleId);
        await c.audit({
          eventType: MEMBERSHIP_EVENTS[member.kind].update,
          projectId: project.id,
          metadata: { [`${member.kind}Id`]: id, role, previousRole: roleName(before) },
        });
        invalidateRole(c, project.id, member, id);
        return loadView(c.s, project.id, member, id);
      });
    },

    async remove(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef }, origin?: Origin): Promise<MembershipView> {
      const { grant, project, member, id } = await memberChange(actor, input, origin);
      return grant.run(async (c) => {
        const before = await loadView(c.s, project.id, member, id);
        await c.s.memberships.delete(project.id, member.kind, id);
        await c.audit({ eventType: MEMBERSHIP_EVENTS[member.kind].remove, projectId: project.id, metadata: { [`${member.kind}Id`]: id, role: roleName(before) } });
        invalidateRole(c, project.id, member, id);
        return before;
      });
    },
  };
}
export type MembershipsDomain = ReturnType<typeof membershipsDomain>;
