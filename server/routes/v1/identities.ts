// Machine identities and their Universal Auth credentials (the superadmin's API):
// /api/v1/identities[...] and /api/v1/auth/universal-auth/identities/:identityId[...].
import { z } from 'zod';
import type { ClientSecretInfo, UniversalAuthRow } from '../../../storage/identities.js';
import type { IdentityView } from '../../domain/identities.js';
import { parseJsonBody } from '../../http/body.js';
import type { HttpRequest, Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse, queryObject } from '../input.js';

/** A non-negative integer, as JSON number or (form bodies) a decimal string. */
export const intField = (name: string) =>
  z.union([z.number({ error: `${name} must be an integer` }), z.string().regex(/^\d{1,10}$/, `${name} must be an integer`).transform(Number)])
    .pipe(z.number().int(`${name} must be an integer`).min(0, `${name} must not be negative`).max(2_147_483_647));

const createBody = z.object({
  name: z.string({ error: 'name is required' }).max(256),
  organizationId: z.string().max(64).optional(),
});
const listQuery = z.object({ orgId: z.string().max(64).optional() });
const uaBody = z.object({
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
});
const clientSecretBody = z.object({
  description: z.string().max(256).optional(),
  ttl: intField('ttl').optional(),
  numUsesLimit: intField('numUsesLimit').optional(),
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

const ANY_IP = [
  { ipAddress: '0.0.0.0', prefix: 0, type: 'ipv4' },
  { ipAddress: '::', prefix: 0, type: 'ipv6' },
];

/** Infisical's shape. This service keys Universal Auth by identity: `id` is the identity's id. */
function universalAuthJson(ua: UniversalAuthRow, orgId?: string) {
  return {
    id: ua.identityId,
    identityId: ua.identityId,
    clientId: ua.clientId,
    accessTokenTTL: ua.accessTokenTtl,
    accessTokenMaxTTL: ua.accessTokenMaxTtl,
    accessTokenNumUsesLimit: 0,
    clientSecretTrustedIps: ANY_IP,
    accessTokenTrustedIps: ANY_IP,
    ...(orgId ? { orgId } : {}),
    createdAt: ua.createdAt.toISOString(),
    updatedAt: ua.updatedAt.toISOString(),
  };
}

/** Never the value or its hash: only what identifies and limits the secret. */
function clientSecretJson(c: ClientSecretInfo) {
  return {
    id: c.id,
    identityId: c.identityId,
    identityUAId: c.identityId,
    description: c.description,
    clientSecretPrefix: c.prefix,
    ttl: c.ttl,
    clientSecretTTL: c.ttl,
    numUses: c.numUses,
    clientSecretNumUses: c.numUses,
    numUsesLimit: c.numUsesLimit,
    clientSecretNumUsesLimit: c.numUsesLimit,
    isClientSecretRevoked: c.isRevoked,
    lastUsedAt: c.lastUsedAt ? c.lastUsedAt.toISOString() : null,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

const ctx = (req: HttpRequest) => ({ ip: req.remoteAddress || null });

export function registerIdentityRoutes(router: Router, svc: Services) {
  const ids = svc.identities;

  router.post('/api/v1/identities', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(createBody, parseJsonBody(req));
    const identity = await ids.create(actor, { name: b.name, organizationId: b.organizationId || undefined }, ctx(req));
    return { body: { identity: identityJson(identity) } };
  });

  router.get('/api/v1/identities', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(listQuery, queryObject(req.query));
    const list = await ids.list(actor, { orgId: q.orgId });
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
  });

  router.get('/api/v1/identities/:identityId', async (req) => {
    const actor = await svc.auth.actor(req);
    return { body: { identity: identityJson(await ids.get(actor, req.params.identityId!)) } };
  });

  router.delete('/api/v1/identities/:identityId', async (req) => {
    const actor = await svc.auth.actor(req);
    return { body: { identity: identityJson(await ids.delete(actor, req.params.identityId!, ctx(req))) } };
  });

  const UA = '/api/v1/auth/universal-auth/identities/:identityId';

  router.post(UA, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(uaBody, parseJsonBody(req));
    const ua = await ids.attachUniversalAuth(actor, req.params.identityId!, { accessTokenTtl: b.accessTokenTTL, accessTokenMaxTtl: b.accessTokenMaxTTL }, ctx(req));
    return { body: { identityUniversalAuth: universalAuthJson(ua) } };
  });

  router.get(UA, async (req) => {
    const actor = await svc.auth.actor(req);
    return { body: { identityUniversalAuth: universalAuthJson(await ids.getUniversalAuth(actor, req.params.identityId!)) } };
  });

  router.post(`${UA}/client-secrets`, async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(clientSecretBody, parseJsonBody(req));
    const { clientSecret, clientSecretData } = await ids.createClientSecret(actor, req.params.identityId!, b, ctx(req));
    // The one response that ever carries the value.
    return { body: { clientSecret, clientSecretData: clientSecretJson(clientSecretData) } };
  });

  router.get(`${UA}/client-secrets`, async (req) => {
    const actor = await svc.auth.actor(req);
    const list = await ids.listClientSecrets(actor, req.params.identityId!);
    return { body: { clientSecretData: list.map(clientSecretJson) } };
  });

  router.get(`${UA}/client-secrets/:clientSecretId`, async (req) => {
    const actor = await svc.auth.actor(req);
    const row = await ids.getClientSecret(actor, req.params.identityId!, req.params.clientSecretId!);
    return { body: { clientSecretData: clientSecretJson(row) } };
  });

  router.post(`${UA}/client-secrets/:clientSecretId/revoke`, async (req) => {
    const actor = await svc.auth.actor(req);
    const row = await ids.revokeClientSecret(actor, req.params.identityId!, req.params.clientSecretId!, ctx(req));
    return { body: { clientSecretData: clientSecretJson(row) } };
  });
}
