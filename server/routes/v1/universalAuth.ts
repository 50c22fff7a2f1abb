// Universal Auth of machine identities (the superadmin's API):
// /api/v1/auth/universal-auth/identities/:identityId[/client-secrets[/:clientSecretId[/revoke]]].
import { z } from 'zod';
import type { ClientSecretInfo, UniversalAuthRow } from '../../../storage/identities.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { intField } from '../input.js';
import { isoString } from '../shape.js';

const uaBody = z.object({
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
});
const clientSecretBody = z.object({
  description: z.string().max(256).optional(),
  ttl: intField('ttl').optional(),
  numUsesLimit: intField('numUsesLimit').optional(),
});

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


const UA = '/api/v1/auth/universal-auth/identities/:identityId';

const trustedIps = z.array(z.object({ ipAddress: z.string(), prefix: z.number().int(), type: z.string() }));
const oneUniversalAuth = z.object({
  identityUniversalAuth: z.object({
    id: z.string(),
    identityId: z.string(),
    clientId: z.string(),
    accessTokenTTL: z.number().int(),
    accessTokenMaxTTL: z.number().int(),
    accessTokenNumUsesLimit: z.number().int(),
    clientSecretTrustedIps: trustedIps,
    accessTokenTrustedIps: trustedIps,
    orgId: z.string().optional(),
    createdAt: isoString,
    updatedAt: isoString,
  }),
});
const clientSecretSchema = z.object({
  id: z.string(),
  identityId: z.string(),
  identityUAId: z.string(),
  description: z.string(),
  clientSecretPrefix: z.string(),
  ttl: z.number().int(),
  clientSecretTTL: z.number().int(),
  numUses: z.number().int(),
  clientSecretNumUses: z.number().int(),
  numUsesLimit: z.number().int(),
  clientSecretNumUsesLimit: z.number().int(),
  isClientSecretRevoked: z.boolean(),
  lastUsedAt: isoString.nullable(),
  createdAt: isoString,
  updatedAt: isoString,
});
const oneClientSecret = z.object({ clientSecretData: clientSecretSchema });

export function registerUniversalAuthRoutes(api: Api, svc: Services) {
  const ids = svc.identities;

  api.post(
    UA,
    { caller: 'any', summary: 'Attach Universal Auth to an identity', body: uaBody, response: oneUniversalAuth },
    async ({ actor, params, body, origin }) => {
      const ua = await ids.attachUniversalAuth(actor, params.identityId, { accessTokenTtl: body.accessTokenTTL, accessTokenMaxTtl: body.accessTokenMaxTTL }, origin);
      return { body: { identityUniversalAuth: universalAuthJson(ua) } };
    },
  );

  api.get(
    UA,
    { caller: 'any', summary: "An identity's Universal Auth configuration", response: oneUniversalAuth },
    async ({ actor, params }) => ({ body: { identityUniversalAuth: universalAuthJson(await ids.getUniversalAuth(actor, params.identityId)) } }),
  );

  api.post(
    `${UA}/client-secrets`,
    { caller: 'any', summary: 'Create a client secret (shown once, in this answer only)', body: clientSecretBody, response: z.object({ clientSecret: z.string(), clientSecretData: clientSecretSchema }) },
    async ({ actor, params, body, origin }) => {
      const { clientSecret, clientSecretData } = await ids.createClientSecret(actor, params.identityId, body, origin);
      // The one response that ever carries the value.
      return { body: { clientSecret, clientSecretData: clientSecretJson(clientSecretData) } };
    },
  );

  api.get(
    `${UA}/client-secrets`,
    { caller: 'any', summary: "An identity's client secrets that are not revoked (never their values)", response: z.object({ clientSecretData: z.array(clientSecretSchema) }) },
    async ({ actor, params }) => ({ body: { clientSecretData: (await ids.listClientSecrets(actor, params.identityId)).map(clientSecretJson) } }),
  );

  api.get(
    `${UA}/client-secrets/:clientSecretId`,
    { caller: 'any', summary: 'One client secret (never its value)', response: oneClientSecret },
    async ({ actor, params }) => ({
      body: { clientSecretData: clientSecretJson(await ids.getClientSecret(actor, params.identityId, params.clientSecretId)) },
    }),
  );

  api.post(
    `${UA}/client-secrets/:clientSecretId/revoke`,
    { caller: 'any', summary: 'Revoke a client secret; the tokens it issued stop working at once', response: oneClientSecret },
    async ({ actor, params, origin }) => ({
      body: { clientSecretData: clientSecretJson(await ids.revokeClientSecret(actor, params.identityId, params.clientSecretId, origin)) },
    }),
  );
}
