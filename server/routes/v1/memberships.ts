// Project memberships of identities and users (project admins):
// /api/v1/projects/:projectId/memberships/identities[/:identityId]
// /api/v1/projects/:projectId/memberships/users[/:userId]
// and Infisical's v2 paths: /api/v2/workspace/:projectId/identity-memberships/:identityId
// (Terraform) and POST /api/v2/workspace/:projectId/memberships (people by e-mail: the SDK's
// and the MCP server's invite-members, Terraform's infisical_project_user)
import { z } from 'zod';
import type { MemberKind, MembershipView } from '../../../storage/memberships.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import type { TemporaryGrant } from '../../domain/memberships.js';
import { AppError } from '../../errors.js';
import { boolish } from '../input.js';
import { isoString } from '../shape.js';

/** Go's zero time.Time: what Terraform sends as temporaryAccessStartTime for a permanent role. */
const GO_ZERO_TIME = /^0001-01-01T00:00:00(\.0+)?Z$/;
const NOT_TEMPORARY = 'asks for temporary access: set isTemporary to true, or leave it out';

/**
 * One of Infisical's `roles[]`: a role, permanent or temporary (isTemporary with
 * temporaryMode "relative", a temporaryRange such as "1h" or "7d", and the start). A
 * permanent role may carry the temporary fields empty (Terraform sends "", "" and Go's
 * zero time): they ask for nothing. Set on a permanent role, they are refused.
 */
const roleEntry = z
  .strictObject({
    role: z.string({ error: 'roles[].role is required' }).max(64),
    isTemporary: boolish.optional(),
    temporaryMode: z.string({ error: 'temporaryMode must be a string' }).max(16).nullable().optional(),
    temporaryRange: z.string({ error: 'temporaryRange must be a string' }).max(32).nullable().optional(),
    temporaryAccessStartTime: z.string({ error: 'temporaryAccessStartTime must be a string' }).max(64).nullable().optional(),
  })
  .transform((r, c) => {
    const fail = (path: string, message: string) => {
      c.addIssue({ code: 'custom', path: [path], message });
      return z.NEVER;
    };
    if (r.isTemporary !== true) {
      if (r.temporaryMode) return fail('temporaryMode', `temporaryMode ${NOT_TEMPORARY}`);
      if (r.temporaryRange) return fail('temporaryRange', `temporaryRange ${NOT_TEMPORARY}`);
      if (r.temporaryAccessStartTime && !GO_ZERO_TIME.test(r.temporaryAccessStartTime)) return fail('temporaryAccessStartTime', `temporaryAccessStartTime ${NOT_TEMPORARY}`);
      return { role: r.role.trim(), temporary: undefined };
    }
    if (r.temporaryMode !== 'relative') return fail('temporaryMode', 'temporaryMode must be "relative" (the only mode Infisical has)');
    if (!r.temporaryRange) return fail('temporaryRange', 'temporaryRange is required for temporary access (e.g. "1h", "7d")');
    const start = r.temporaryAccessStartTime ? new Date(r.temporaryAccessStartTime) : undefined;
    if (!start || Number.isNaN(start.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(r.temporaryAccessStartTime!)) {
      return fail('temporaryAccessStartTime', 'temporaryAccessStartTime must be an ISO 8601 date and time');
    }
    const temporary: TemporaryGrant = { mode: 'relative', range: r.temporaryRange, startTime: start };
    return { role: r.role.trim(), temporary };
  });

// `role`, as the contract names it, or Infisical's `roles: [{role, isTemporary, …}]` with one entry.
const roleFields = {
  role: z.string().max(64).optional(),
  roles: z.array(roleEntry).min(1).max(1, 'exactly one role').optional(),
};
type RoleFields = { role?: string; roles?: Array<{ role: string; temporary: TemporaryGrant | undefined }> };
function chosenRole(b: RoleFields, c: z.RefinementCtx): { role: string; temporary?: TemporaryGrant } {
  const entry = b.roles?.[0];
  const role = b.role?.trim() ?? entry?.role;
  if (role === undefined) {
    c.addIssue({ code: 'custom', path: ['role'], message: 'role is required' });
    return z.NEVER;
  }
  if (b.role !== undefined && entry !== undefined && entry.role !== b.role.trim()) {
    c.addIssue({ code: 'custom', path: ['roles'], message: 'role and roles disagree' });
    return z.NEVER;
  }
  return { role, temporary: entry?.temporary };
}
const roleBody = z.strictObject(roleFields).transform(chosenRole);

/**
 * Terraform's infisical_project_identity body at /api/v2/workspace/:projectId/identity-memberships/:identityId
 * (terraform-provider-infisical internal/client/model.go CreateProjectIdentityRequest):
 * the project's and the identity's ids again (must be the path's), and `roles`.
 */
const v2RoleBody = z
  .strictObject({ ...roleFields, projectId: z.string().max(64).optional(), identityId: z.string().max(64).optional() })
  .transform((b, c) => ({ ...chosenRole(b, c), projectId: b.projectId, identityId: b.identityId }));
/** GET and DELETE: Terraform sends {projectId, identityId} as a body there too. */
const v2RefBody = z.object({ projectId: z.string().max(64).optional(), identityId: z.string().max(64).optional() });

function samePath(body: { projectId?: string; identityId?: string }, params: { projectId: string; identityId: string }): void {
  for (const f of ['projectId', 'identityId'] as const) {
    if (body[f] !== undefined && body[f].toLowerCase() !== params[f].toLowerCase()) throw new AppError('VALIDATION', `${f} must be the ${f === 'projectId' ? 'project' : 'identity'} id in the path`);
  }
}

/** The contract's `role`: a built-in role, or the custom role's slug (Infisical's `roles[]` say 'custom' and name it). */
const roleSlug = (m: MembershipView) => (m.role === 'custom' ? (m.customRoleSlug ?? 'custom') : m.role);

function rolesJson(m: MembershipView) {
  return [
    {
      id: m.id,
      role: m.role,
      customRoleId: m.customRoleId,
      customRoleSlug: m.customRoleSlug,
      isTemporary: m.temporaryAccessEndTime !== null,
      temporaryMode: m.temporaryMode,
      temporaryRange: m.temporaryRange,
      temporaryAccessStartTime: m.temporaryAccessStartTime?.toISOString() ?? null,
      temporaryAccessEndTime: m.temporaryAccessEndTime?.toISOString() ?? null,
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
    temporaryMode: z.literal('relative').nullable(),
    temporaryRange: z.string().nullable(),
    temporaryAccessStartTime: isoString.nullable(),
    temporaryAccessEndTime: isoString.nullable(),
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
      async ({ actor, params, body, origin }) => ({ body: { [k.one]: k.json(await memberships.add(actor, { ...refs(params), ...body }, origin)) } }),
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
        const json = k.json(await memberships.setRole(actor, { ...refs(params), ...body }, origin));
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

  // Infisical's "invite members" (Infisical/infisical backend/src/server/routes/v2/
  // deprecated-project-membership-router.ts: {emails, usernames, roleSlugs?} → {memberships});
  // sent by @infisical/sdk 4.x projects().inviteMembers (the MCP server's invite-members-to-project)
  // and Terraform's infisical_project_user (internal/client/model.go CreateProjectUserRequest
  // {projectId, usernames}). A username here is the person's e-mail address.
  const address = z.string({ error: 'emails and usernames must be strings' }).max(320, 'an e-mail address is at most 320 characters');
  const inviteBody = z.object({
    emails: z.array(address).max(100).nullable().optional(),
    usernames: z.array(address).max(100).nullable().optional(),
    roleSlugs: z.array(z.string().max(64)).min(1, 'roleSlugs: give one role, or leave it out for "member"').max(1, 'roleSlugs: one role per member here (several roles on one membership are not supported)').nullable().optional(),
    projectId: z.string().max(64).optional(),
  });
  api.post(
    '/api/v2/workspace/:projectId/memberships',
    {
      caller: 'any',
      summary: 'Add people, named by e-mail address, to the project with one role (default member): all or none; every address must be a person who exists here (no invitations are sent)',
      body: inviteBody,
      response: z.object({ memberships: z.array(userMembershipSchema) }),
    },
    async ({ actor, params, body, origin }) => {
      if (body.projectId !== undefined && body.projectId.toLowerCase() !== params.projectId.toLowerCase()) throw new AppError('VALIDATION', 'projectId must be the project id in the path');
      const made = await memberships.addUsersByEmail(
        actor,
        { project: { id: params.projectId }, emails: [...(body.emails ?? []), ...(body.usernames ?? [])], role: body.roleSlugs?.[0] },
        origin,
      );
      return { body: { memberships: made.map(userMembershipJson) } };
    },
  );

  // Terraform's infisical_project_identity (terraform-provider-infisical internal/client/project_identity.go):
  // the same handlers as /api/v1/projects/:projectId/memberships/identities/:identityId, Infisical's v2 paths and bodies.
  const v2 = '/api/v2/workspace/:projectId/identity-memberships/:identityId';
  const ref = (params: { projectId: string; identityId: string }) => ({ project: { id: params.projectId }, member: { kind: 'identity' as const, id: params.identityId } });
  const oneV2 = z.object({ identityMembership: identityMembershipSchema });
  api.post(v2, { caller: 'any', summary: 'Add an identity to the project with a role (Infisical v2 path)', body: v2RoleBody, response: oneV2 }, async ({ actor, params, body, origin }) => {
    samePath(body, params);
    return { body: { identityMembership: identityMembershipJson(await memberships.add(actor, { ...ref(params), role: body.role, temporary: body.temporary }, origin)) } };
  });
  api.get(v2, { caller: 'any', summary: 'The role of an identity in the project (Infisical v2 path)', response: oneV2 }, async ({ actor, params }) => ({
    body: { identityMembership: identityMembershipJson(await memberships.get(actor, ref(params))) },
  }));
  api.patch(
    v2,
    { caller: 'any', summary: 'Change the role of an identity in the project (Infisical v2 path)', body: v2RoleBody, response: oneV2.extend({ roles: rolesSchema }) },
    async ({ actor, params, body, origin }) => {
      samePath(body, params);
      const json = identityMembershipJson(await memberships.setRole(actor, { ...ref(params), role: body.role, temporary: body.temporary }, origin));
      return { body: { identityMembership: json, roles: json.roles } };
    },
  );
  api.delete(
    v2,
    { caller: 'any', summary: 'Remove an identity from the project (Infisical v2 path)', body: v2RefBody, bodyFrom: 'body+query', response: oneV2 },
    async ({ actor, params, body, origin }) => {
      samePath(body, params);
      return { body: { identityMembership: identityMembershipJson(await memberships.remove(actor, ref(params), origin)) } };
    },
  );
}
