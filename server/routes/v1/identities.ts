// Machine identities (the superadmin's API): /api/v1/identities[...]. Their Universal
// Auth credentials are in universalAuth.ts.
import { z } from 'zod';
import type { IdentityView } from '../../domain/identities.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { isoString } from '../shape.js';

const createBody = z.object({
  name: z.string({ error: 'name is required' }).max(256),
  organizationId: z.string().max(64).optional(),
});
const listQuery = z.object({ orgId: z.string().max(64).optional() });

const identitySchema = z.object({
  id: z.string(),
  name: z.string(),
  orgId: z.string(),
  authMethods: z.array(z.string()),
  hasDeleteProtection: z.boolean(),
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

  api.delete(
    '/api/v1/identities/:identityId',
    { caller: 'any', summary: 'Delete a machine identity; its tokens stop working at once (superadmin)', response: oneIdentity },
    async ({ actor, params, origin }) => ({ body: { identity: identityJson(await ids.delete(actor, params.identityId, origin)) } }),
  );
}
