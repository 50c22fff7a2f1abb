// Project memberships of identities and users (project admins):
// /api/v1/projects/:projectId/memberships/identities[/:identityId]
// /api/v1/projects/:projectId/memberships/users[/:userId]
import { z } from 'zod';
import type { MemberKind, MembershipView } from '../../../storage/memberships.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { isoString } from '../shape.js';

// `role`, as the contract names it, or Infisical's `roles: [{role}]` with one entry.
const roleBody = z
  .strictObject({
    role: z.string().max(64).optional(),
    roles: z.array(z.strictObject({ role: z.string({ error: 'roles[].role is required' }).max(64) })).min(1).max(1, 'exactly one role').optional(),
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

/** The contract's `role`: a built-in role, or the custom role's slug (Infisical's `roles[]` say 'custom' and name it). */
const roleSlug = (m: MembershipView) => (m.role === 'custom' ? (m.customRoleSlug ?? 'custom') : m.role);

function rolesJson(m: MembershipView) {
  return [
    {
      id: m.id,
      role: m.role,
      customRoleId: m.customRoleId,
      customRoleSlug: m.customRoleSlug,
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
    role: roleSlug(m),
    roles: rolesJson(m),
    identity: { id: m.identityId, name: m.identityName, authMethods: [...(m.identityHasUniversalAuth ? ['universal-auth'] : []), ...m.identityTokenAuthMethods] },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

export function userMembershipJson(m: MembershipView) {
  return {
    id: m.id,
    userId: m.userId,
    projectId: m.projectId,
    role: roleSlug(m),
    roles: rolesJson(m),
    user: { id: m.userId, email: m.userEmail, username: m.userEmail, firstName: m.userFirstName, lastName: m.userLastName },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

type MembershipJson = ReturnType<typeof identityMembershipJson> | ReturnType<typeof userMembershipJson>;

const rolesSchema = z.array(
  z.object({
    id: z.string(),
    role: z.string(),
    customRoleId: z.string().nullable(),
    customRoleSlug: z.string().nullable(),
    isTemporary: z.boolean(),
    createdAt: isoString,
    updatedAt: isoString,
  }),
);
const membershipFields = { id: z.string(), projectId: z.string(), role: z.string(), roles: rolesSchema, createdAt: isoString, updatedAt: isoString };
const identityMembershipSchema = z.object({
  ...membershipFields,
  identityId: z.string(),
  identity: z.object({ id: z.string(), name: z.string().nullable(), authMethods: z.array(z.string()) }),
});
const userMembershipSchema = z.object({
  ...membershipFields,
  userId: z.string(),
  user: z.object({ id: z.string(), email: z.string().nullable(), username: z.string().nullable(), firstName: z.string().nullable(), lastName: z.string().nullable() }),
});

const KINDS: Record<
  MemberKind,
  { segment: string; param: string; one: string; many: string; json: (m: MembershipView) => MembershipJson; schema: z.ZodObject }
> = {
  identity: { segment: 'identities', param: 'identityId', one: 'identityMembership', many: 'identityMemberships', json: identityMembershipJson, schema: identityMembershipSchema },
  user: { segment: 'users', param: 'userId', one: 'membership', many: 'memberships', json: userMembershipJson, schema: userMembershipSchema },
} as const;

export function registerMembershipRoutes(api: Api, svc: Services) {
  const memberships = svc.memberships;

  for (const kind of ['identity', 'user'] as MemberKind[]) {
    const k = KINDS[kind];
    const base = `/api/v1/projects/:projectId/memberships/${k.segment}` as const;
    // The member's parameter is named as Infisical names it (identityId, userId).
    const one = `${base}/:${k.param}` as `${typeof base}/:memberId`;
    const refs = (params: { projectId: string }) => ({
      project: { id: params.projectId },
      member: { kind, id: (params as Record<string, string>)[k.param] ?? '' },
    });
    const who = kind === 'identity' ? 'an identity' : 'a person';
    const one_ = z.object({ [k.one]: k.schema });
    const many = z.object({ [k.many]: z.array(k.schema) });
    const patched = z.object({ [k.one]: k.schema, roles: rolesSchema });

    api.get(
      base,
      { caller: 'any', summary: `The project's ${k.segment} with their roles (project admins)`, response: many },
      async ({ actor, params }) => ({
        body: { [k.many]: (await memberships.list(actor, { project: { id: params.projectId }, kind })).map((m) => k.json(m)) },
      }),
    );

    api.post(
      one,
      { caller: 'any', summary: `Add ${who} to the project with a role`, body: roleBody, response: one_ },
      async ({ actor, params, body, origin }) => ({ body: { [k.one]: k.json(await memberships.add(actor, { ...refs(params), role: body }, origin)) } }),
    );

    api.get(
      one,
      { caller: 'any', summary: `The role of ${who} in the project`, response: one_ },
      async ({ actor, params }) => ({ body: { [k.one]: k.json(await memberships.get(actor, refs(params))) } }),
    );

    api.patch(
      one,
      { caller: 'any', summary: `Change the role of ${who} in the project`, body: roleBody, response: patched },
      async ({ actor, params, body, origin }) => {
        const json = k.json(await memberships.setRole(actor, { ...refs(params), role: body }, origin));
        // Infisical's PATCH answers `{roles}`; the membership comes along.
        return { body: { [k.one]: json, roles: json.roles } };
      },
    );

    api.delete(
      one,
      { caller: 'any', summary: `Remove ${who} from the project`, response: one_ },
      async ({ actor, params, origin }) => ({ body: { [k.one]: k.json(await memberships.remove(actor, refs(params), origin)) } }),
    );
  }
}
