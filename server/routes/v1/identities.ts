// Machine identities (the superadmin's API): /api/v1/identities[...] (create, list, read,
// rename, delete; Infisical's and Terraform's bodies). Their Universal Auth credentials are
// in universalAuth.ts.
import { z } from 'zod';
import type { IdentityView } from '../../domain/identities.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { AppError } from '../../errors.js';
import { boolish } from '../input.js';
import { isoString } from '../shape.js';

/**
 * What Terraform's infisical_identity sends besides name and organizationId
 * (terraform-provider-infisical internal/client/model.go CreateIdentityRequest {name,
 * hasDeleteProtection, organizationId, role, metadata (omitempty)}, UpdateIdentityRequest
 * {identityId, name (omitempty), hasDeleteProtection, role (omitempty), metadata}). An
 * identity here has no organization role (its access is its project memberships alone:
 * read answers `role: "no-access"`), no delete protection and no metadata, so each is
 * accepted only when it asks for nothing: role "no-access", hasDeleteProtection false,
 * metadata empty. Anything else is a 422 naming the field, never stored and ignored.
 */
const orgFields = {
  role: z
    .string({ error: 'role must be a string' })
    .max(64)
    .optional()
    .refine((r) => r === undefined || r === 'no-access', 'role: identities have no organization role here (their access is their project memberships): send "no-access" or leave it out'),
  hasDeleteProtection: boolish.optional().refine((v) => v !== true, 'hasDeleteProtection: delete protection is not supported here'),
  metadata: z
    .array(z.object({ key: z.string().max(256), value: z.string().max(1024) }))
    .max(100)
    .nullable()
    .optional()
    .refine((m) => m == null || m.length === 0, 'metadata: identity metadata is not supported here (send [] or leave it out)'),
};
const createBody = z.object({
  name: z.string({ error: 'name is required' }).max(256),
  organizationId: z.string().max(64).optional(),
  ...orgFields,
});
const updateBody = z.object({
  name: z.string({ error: 'name must be a string' }).max(256).optional(),
  identityId: z.string().max(64).optional(),
  ...orgFields,
});
const listQuery = z.object({ orgId: z.string().max(64).optional() });

const identitySchema = z.object({
  id: z.string(),
  name: z.string(),
  orgId: z.string(),
  authMethods: z.array(z.string()),
  hasDeleteProtection: z.boolean(),
  metadata: z.array(z.object({ key: z.string(), value: z.string() })),
  createdAt: isoString,
  updatedAt: isoString,
});
const oneIdentity = z.object({ identity: identitySchema });
const oneOrgIdentity = z.object({
  identity: identitySchema.extend({ identityId: z.string(), identity: identitySchema, role: z.literal('no-access'), customRole: z.null() }),
});
const identityList = z.object({
  identities: z.array(z.object({ id: z.string(), identityId: z.string(), orgId: z.string(), createdAt: isoString, updatedAt: isoString, identity: identitySchema })),
  totalCount: z.number().int(),
});

export function identityJson(i: IdentityView) {
  return {
    id: i.id,
    name: i.name,
    orgId: i.orgId,
    authMethods: i.authMethods,
    hasDeleteProtection: false,
    metadata: [],
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  };
}

export function registerIdentityRoutes(api: Api, svc: Services) {
  const ids = svc.identities;

  api.post(
    '/api/v1/identities',
    { caller: 'any', summary: 'Create a machine identity (superadmin)', body: createBody, response: oneIdentity },
    async ({ actor, body, origin }) => ({
      body: { identity: identityJson(await ids.create(actor, { name: body.name, organizationId: body.organizationId || undefined }, origin)) },
    }),
  );

  api.get(
    '/api/v1/identities',
    { caller: 'any', summary: 'The machine identities of the organization (superadmin)', query: listQuery, response: identityList },
    async ({ actor, query }) => {
      const list = await ids.list(actor, { orgId: query.orgId });
      // Infisical lists organization memberships of identities, each wrapping the identity.
      return {
        body: {
          identities: list.map((i) => ({
            id: i.id,
            identityId: i.id,
            orgId: i.orgId,
            createdAt: i.createdAt.toISOString(),
            updatedAt: i.updatedAt.toISOString(),
            identity: identityJson(i),
          })),
          totalCount: list.length,
        },
      };
    },
  );

  // Infisical answers the identity's organization membership here, wrapping the identity
  // (Terraform reads {identity: {identity, role, orgId, customRole}}: terraform-provider-infisical
  // internal/client/model.go GetIdentityResponse / OrgIdentity); the identity's own fields
  // stay at the top as well, for the clients of today. No organization roles exist here: an
  // identity's access is its project memberships alone, so its organization role is 'no-access'.
  api.get(
    '/api/v1/identities/:identityId',
    { caller: 'any', summary: 'One machine identity (superadmin)', response: oneOrgIdentity },
    async ({ actor, params }) => {
      const json = identityJson(await ids.get(actor, params.identityId));
      return { body: { identity: { ...json, identityId: json.id, identity: json, role: 'no-access', customRole: null } } };
    },
  );

  // Terraform's update (PATCH, the body above; it parses {identity: {id, name,
  // hasDeleteProtection, authMethods, metadata}}).
  api.patch(
    '/api/v1/identities/:identityId',
    { caller: 'any', summary: 'Rename a machine identity (superadmin)', body: updateBody, response: oneIdentity },
    async ({ actor, params, body, origin }) => {
      if (body.identityId !== undefined && body.identityId.toLowerCase() !== params.identityId.toLowerCase()) throw new AppError('VALIDATION', 'identityId must be the identity id in the path');
      return { body: { identity: identityJson(await ids.update(actor, params.identityId, { name: body.name || undefined }, origin)) } };
    },
  );

  api.delete(
    '/api/v1/identities/:identityId',
    { caller: 'any', summary: 'Delete a machine identity; its tokens stop working at once (superadmin)', response: oneIdentity },
    async ({ actor, params, origin }) => ({ body: { identity: identityJson(await ids.delete(actor, params.identityId, origin)) } }),
  );
}
