// Who is in a project with which role: identities and users. Project admins (a member
// with the admin role, or the superadmin) manage them. A change is one transaction with
// its audit entry; after the commit the cached role is dropped on every replica, so the
// member's very next request sees the new role.
import type { Store } from '../../storage/index.js';
import { ROLES, type MemberKind, type MembershipRole, type MembershipView, type Role, type TemporaryAccess } from '../../storage/memberships.js';
import { AppError } from '../errors.js';
import { isUuid, SYSTEM, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { existingIdentity } from './identities.js';
import type { Change, Origin, WritePipeline } from './pipeline.js';
import { CONTROL_CHARACTER, LONE_SURROGATE } from './text.js';

export interface MembershipsDeps {
  store: { memberships: Pick<Store['memberships'], 'get' | 'list' | 'unauditedExpiries'> };
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

/** The audit event of a temporary grant's end (recorded by the sweep, after the end took effect). */
export const MEMBERSHIP_EXPIRED_EVENT = 'membership-temporary-access-expired';

/** A temporary grant as asked for (Infisical's temporaryMode / temporaryRange / temporaryAccessStartTime). */
export interface TemporaryGrant {
  mode: 'relative';
  range: string;
  startTime: Date;
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000, y: 365.25 * 86_400_000 };
const MAX_RANGE_MS = 10 * UNIT_MS.y!;

/**
 * A temporaryRange's length in milliseconds: a whole number and a unit, as Infisical's
 * clients send it ("30m", "1h", "7d"); from one second to ten years. Anything else is a 422.
 */
export function rangeMs(range: string): number {
  const m = /^(\d{1,9})(s|m|h|d|w|y)$/.exec(range);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]!]! : NaN;
  if (!(ms >= 1_000 && ms <= MAX_RANGE_MS)) {
    throw new AppError('VALIDATION', 'temporaryRange must be a whole number and a unit (s, m, h, d, w, y), e.g. "1h" or "7d", from 1s to 10y');
  }
  return ms;
}

/** The stored window of a grant: its end is its start plus its range. */
function windowOf(t: TemporaryGrant | undefined): TemporaryAccess | null {
  if (!t) return null;
  if (Number.isNaN(t.startTime.getTime())) throw new AppError('VALIDATION', 'temporaryAccessStartTime must be an ISO 8601 date and time');
  return { mode: t.mode, range: t.range, startTime: t.startTime, endTime: new Date(t.startTime.getTime() + rangeMs(t.range)) };
}

/** What the audit trail says of a grant's window (nothing for a permanent one). */
const windowMetadata = (w: TemporaryAccess | null): Record<string, string | boolean> =>
  w
    ? { isTemporary: true, temporaryMode: w.mode, temporaryRange: w.range, temporaryAccessStartTime: w.startTime.toISOString(), temporaryAccessEndTime: w.endTime.toISOString() }
    : { isTemporary: false };

/** Most people one invitation may name. */
export const MAX_INVITES = 100;

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

  /** Inserts the membership, with its audit entry; a cached "not a member" answer for it is dropped after the commit. */
  async function insertMember(c: Change, projectId: string, member: MemberRef, id: string, role: string, resolved: { role: MembershipRole; customRoleId: string | null }, window: TemporaryAccess | null): Promise<MembershipView> {
    await c.s.memberships.insert(projectId, member.kind, id, resolved.role, resolved.customRoleId, window);
    await c.audit({ eventType: MEMBERSHIP_EVENTS[member.kind].add, projectId, metadata: { [`${member.kind}Id`]: id, role, ...windowMetadata(window) } });
    invalidateRole(c, projectId, member, id);
    return loadView(c.s, projectId, member, id);
  }

  return {
    async add(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string; temporary?: TemporaryGrant }, origin?: Origin): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const window = windowOf(input.temporary);
      const { grant, project, member, id } = await memberChange(actor, input, origin);
      return grant.run(async (c) => {
        const resolved = await resolveRole(c.s, project.id, role);
        const exists = member.kind === 'identity' ? await c.s.identities.byId(id) : await c.s.users.byId(id);
        if (!exists) throw notMember(member);
        if (await c.s.memberships.get(project.id, member.kind, id)) {
          throw new AppError('BAD_REQUEST', `${noun(member.kind)} with ID '${id}' already exists in project with ID '${project.id}'`);
        }
        return insertMember(c, project.id, member, id, role, resolved, window);
      });
    },

    /**
     * Infisical's "invite members" (POST /api/v2/workspace/:projectId/memberships): people
     * named by e-mail address (their username here) join the project with one role, all
     * or none, in one transaction. There are no invitations here: every address must be a
     * person the superadmin has created, or the request is a 404 naming it and nobody is
     * added. As Infisical, someone already a member is left as they are and not in the
     * answer, unless a role was asked for that differs from theirs (a 400: a role is
     * changed with PATCH, never dropped silently). Answers the memberships made.
     */
    async addUsersByEmail(actor: Actor | SystemActor, input: { project: ProjectRef; emails: readonly string[]; role?: string }, origin?: Origin): Promise<MembershipView[]> {
      const role = input.role ?? 'member';
      checkRole(role);
      const emails = [...new Set(input.emails.map((e) => e.trim().toLowerCase()))];
      if (emails.length === 0) throw new AppError('VALIDATION', 'emails or usernames must name at least one person');
      if (emails.length > MAX_INVITES) throw new AppError('VALIDATION', `at most ${MAX_INVITES} people at once`);
      const grant = await changes.inProject(actor, input.project, 'project:admin', origin);
      const { project } = grant;
      return grant.run(async (c) => {
        const resolved = await resolveRole(c.s, project.id, role);
        const added: MembershipView[] = [];
        for (const email of emails) {
          const user = CONTROL_CHARACTER.test(email) || LONE_SURROGATE.test(email) ? undefined : await c.s.users.byEmail(email);
          if (!user) {
            throw new AppError('NOT_FOUND', `No user with email '${email.slice(0, 320)}': this service sends no invitations, the superadmin creates people first (nobody was added)`);
          }
          const member: MemberRef = { kind: 'user', id: user.id };
          const current = await c.s.memberships.get(project.id, 'user', user.id);
          if (current) {
            if (input.role !== undefined && (current.role !== resolved.role || current.customRoleId !== resolved.customRoleId)) {
              throw new AppError('BAD_REQUEST', `User '${email}' is already a member of project with ID '${project.id}' with role '${roleName(current)}': change a member's role with PATCH (nobody was added)`);
            }
            continue;
          }
          added.push(await insertMember(c, project.id, member, user.id, role, resolved, null));
        }
        return added;
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

    async setRole(actor: Actor | SystemActor, input: { project: ProjectRef; member: MemberRef; role: string; temporary?: TemporaryGrant }, origin?: Origin): Promise<MembershipView> {
      checkRole(input.role);
      const role = input.role;
      const window = windowOf(input.temporary);
      const { grant, project, member, id } = await memberChange(actor, input, origin);
      return grant.run(async (c) => {
        const before = await loadView(c.s, project.id, member, id);
        const resolved = await resolveRole(c.s, project.id, role);
        await c.s.memberships.updateRole(project.id, member.kind, id, resolved.role, resolved.customRoleId, window);
        await c.audit({
          eventType: MEMBERSHIP_EVENTS[member.kind].update,
          projectId: project.id,
          metadata: { [`${member.kind}Id`]: id, role, previousRole: roleName(before), ...windowMetadata(window) },
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

    /**
     * Records in the audit trail the end of temporary grants past their end (at most
     * `limit`; answers how many). The end itself took effect at its time, at every use
     * (access.ts decide): this only writes it down, once across replicas (the row is
     * marked in the same transaction as its entry), and drops cached roles for tidiness.
     */
    async recordExpiries(limit = 100): Promise<number> {
      let recorded = 0;
      for (const e of await store.memberships.unauditedExpiries(limit)) {
        const member: MemberRef = e.identityId ? { kind: 'identity', id: e.identityId } : { kind: 'user', id: e.userId ?? '' };
        const grant = await changes.inProject(SYSTEM, { id: e.projectId }, 'project:admin');
        const done = await grant.run(async (c) => {
          const row = await c.s.memberships.markExpiryAudited(e.id);
          if (!row) return false;
          await c.audit({
            eventType: MEMBERSHIP_EXPIRED_EVENT,
            projectId: e.projectId,
            metadata: {
              [`${member.kind}Id`]: member.id,
              role: row.role,
              temporaryRange: row.temporaryRange,
              temporaryAccessStartTime: row.temporaryAccessStartTime?.toISOString() ?? null,
              temporaryAccessEndTime: row.temporaryAccessEndTime?.toISOString() ?? null,
            },
          });
          invalidateRole(c, e.projectId, member, member.id);
          return true;
        });
        if (done) recorded++;
      }
      return recorded;
    },
  };
}
export type MembershipsDomain = ReturnType<typeof membershipsDomain>;
