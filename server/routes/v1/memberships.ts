// Project memberships of identities and users (project admins):
// /api/v1/projects/:projectId/memberships/identities[/:identityId]
// /api/v1/projects/:projectId/memberships/users[/:userId]
import { z } from 'zod';
import type { MemberKind, MembershipView } from '../../../storage/memberships.js';
import { membershipsDomain } from '../../domain/memberships.js';
import { AppError } from '../../errors.js';
import { parseJsonBody } from '../../http/body.js';
import type { HttpRequest, Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse } from '../input.js';

// `role`, as the contract names it, or Infisical's `roles: [{role}]` with one entry.
const roleBody = z
  .object({
    role: z.string().max(64).optional(),
    roles: z.array(z.object({ role: z.string({ error: 'roles[].role is required' }).max(64) })).min(1).max(1, 'exactly one role').optional(),
  })
  .transform((b, c) => {
    const role = b.role ?? b.roles?.[0]?.role;
    if (role === undefined) {
      c.addIssue({ code: 'custom', path: ['role'], message: 'role is required' });
      return z.NEVER;
    }
    if (b.role !== undefined && b.roles !== undefined && b.roles[0]!.role !== b.role) {
      c.addIssue({ code: 'custom', path: ['roles'], message: 'role and roles disagree' });
      return z.NEVER;
    }
    return role.trim();
  });

function rolesJson(m: MembershipView) {
  return [
    {
      id: m.id,
      role: m.role,
      customRoleId: null,
      customRoleSlug: null,
      isTemporary: false,
      createdAt: m.createdAt.toISOString(),
      updatedAt: m.updatedAt.toISOString(),
    },
  ];
}

export function identityMembershipJson(m: MembershipView) {
  return {
    id: m.id,
    identityId: m.identityId,
    projectId: m.projectId,
    role: m.role,
    roles: rolesJson(m),
    identity: { id: m.identityId, name: m.identityName, authMethods: m.identityHasUniversalAuth ? ['universal-auth'] : [] },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

export function userMembershipJson(m: MembershipView) {
  return {
    id: m.id,
    userId: m.userId,
    projectId: m.projectId,
    role: m.role,
    roles: rolesJson(m),
    user: { id: m.userId, email: m.userEmail, username: m.userEmail, firstName: m.userFirstName, lastName: m.userLastName },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

type MembershipJson = ReturnType<typeof identityMembershipJson> | ReturnType<typeof userMembershipJson>;

const KINDS: Record<MemberKind, { segment: string; param: string; one: string; many: string; json: (m: MembershipView) => MembershipJson }> = {
  identity: { segment: 'identities', param: 'identityId', one: 'identityMembership', many: 'identityMemberships', json: identityMembershipJson },
  user: { segment: 'users', param: 'userId', one: 'membership', many: 'memberships', json: userMembershipJson },
} as const;

export function registerMembershipRoutes(router: Router, svc: Services) {
  const memberships = membershipsDomain({ store: svc.store, access: svc.access, bus: svc.bus });
  const ctx = (req: HttpRequest) => ({ ip: req.remoteAddress || null });

  for (const kind of ['identity', 'user'] as MemberKind[]) {
    const k = KINDS[kind];
    const base = `/api/v1/projects/:projectId/memberships/${k.segment}`;
    const one = `${base}/:${k.param}`;
    const refs = (req: HttpRequest) => {
      const id = req.params[k.param];
      if (id === undefined) throw new AppError('NOT_FOUND', 'Member not found');
      return { project: { id: req.params.projectId! }, member: { kind, id } };
    };

    router.get(base, async (req) => {
      const actor = await svc.auth.actor(req);
      const list = await memberships.list(actor, { project: { id: req.params.projectId! }, kind });
      return { body: { [k.many]: list.map((m) => k.json(m)) } };
    });

    router.post(one, async (req) => {
      const actor = await svc.auth.actor(req);
      const role = parse(roleBody, parseJsonBody(req));
      const m = await memberships.add(actor, { ...refs(req), role }, ctx(req));
      return { body: { [k.one]: k.json(m) } };
    });

    router.get(one, async (req) => {
      const actor = await svc.auth.actor(req);
      return { body: { [k.one]: k.json(await memberships.get(actor, refs(req))) } };
    });

    router.patch(one, async (req) => {
      const actor = await svc.auth.actor(req);
      const role = parse(roleBody, parseJsonBody(req));
      const m = await memberships.setRole(actor, { ...refs(req), role }, ctx(req));
      const json = k.json(m);
      // Infisical's PATCH answers `{roles}`; the membership comes along.
      return { body: { [k.one]: json, roles: json.roles } };
    });

    router.delete(one, async (req) => {
      const actor = await svc.auth.actor(req);
      return { body: { [k.one]: k.json(await memberships.remove(actor, refs(req), ctx(req))) } };
    });
  }
}
