// Who is in a project with which role: identities and users. Project admins (a member
// with the admin role, or the superadmin) manage them. A change is one transaction with
// its audit entry; after the commit the cached role is dropped on every replica, so the
// member's very next request sees the new role.
import type { CacheBus } from '../../storage/cache.js';
import type { Store } from '../../storage/index.js';
import { ROLES, type MemberKind, type MembershipView, type Role } from '../../storage/memberships.js';
import { AppError } from '../errors.js';
import { auditActor, isUuid, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import type { RequestContext } from './identities.js';

export interface MembershipsDeps {
  store: Store;
  access: Pick<AccessControl, 'authorize'>;
  bus: CacheBus;
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

function checkRole(role: string): asserts role is Role {
  if (!(ROLES as readonly string[]).includes(role)) throw new AppError('VALIDATION', `role must be one of ${ROLES.join(', ')}`);
}

export function membershipsDomain(deps: MembershipsDeps) {
  const { store, access, bus } = deps;

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

  const publish = (projectId: string, member: MemberRef, id: string) => bus.publish(topics.membership, `${projectId}:${member.kind}:${id}`);

  async function loadView(s: Pick<Store, 'memberships'>, projectId: string, member: MemberRef, id: string): Promise<MembershipView> {
    const view = await s.memberships.get(projectId, member.kind, id);
    if (!view) throw notMember(member, projectId);
    return view;
  }

  return {
    async add(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string }, ctx: RequestContext = {}): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const { project } = await admin(actor, input.project);
      const { member } = input;
      const id = memberId(member);
      const view = await store.transaction(async (s) => {
        const exists = member.kind === 'identity' ? await s.identities.byId(id) : await s.users.byId(id);
        if (!exists) throw notMember(member);
        if (await s.memberships.get(project.id, member.kind, id)) {
          throw new AppError('BAD_REQUEST', `${noun(member.kind)} with ID '${id}' already exists in project with ID '${project.id}'`);
        }
        await s.memberships.insert(project.id, member.kind, id, role);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: MEMBERSHIP_EVENTS[member.kind].add,
          projectId: project.id,
          ip: ctx.ip,
          metadata: { [`${member.kind}Id`]: id, role },
        });
        return loadView(s, project.id, member, id);
      });
      // A "not a member" answer may be cached for it.
      await publish(project.id, member, id);
      return view;
    },

    async get(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef }): Promise<MembershipView> {
      const { project } = await admin(actor, input.project);
      return loadView(store, project.id, input.member, memberId(input.member));
    },

    async list(actor: Actor | SystemActor, input: { project: ProjectRef; kind: MemberKind }): Promise<MembershipView[]> {
      const { project } = await admin(actor, input.project);
      return store.memberships.list(project.id, input.kind);
    },

    async setRole(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string }, ctx: RequestContext = {}): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const { project } = await admin(actor, input.project);
      const { member } = input;
      const id = memberId(member);
      const view = await store.transaction(async (s) => {
        const before = await loadView(s, project.id, member, id);
        await s.memberships.updateRole(project.id, member.kind, id, role);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: MEMBERSHIP_EVENTS[member.kind].update,
          projectId: project.id,
          ip: ctx.ip,
          metadata: { [`${member.kind}Id`]: id, role, previousRole: before.role },
        });
        return loadView(s, project.id, member, id);
      });
      await publish(project.id, member, id);
      return view;
    },

    async remove(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef }, ctx: RequestContext = {}): Promise<MembershipView> {
      const { project } = await admin(actor, input.project);
      const { member } = input;
      const id = memberId(member);
      const view = await store.transaction(async (s) => {
        const before = await loadView(s, project.id, member, id);
        await s.memberships.delete(project.id, member.kind, id);
        await s.audit.append(s.tx, {
          ...auditActor(actor),
          eventType: MEMBERSHIP_EVENTS[member.kind].remove,
          projectId: project.id,
          ip: ctx.ip,
          metadata: { [`${member.kind}Id`]: id, role: before.role },
        });
        return before;
      });
      await publish(project.id, member, id);
      return view;
    },
  };
}
export type MembershipsDomain = ReturnType<typeof membershipsDomain>;
