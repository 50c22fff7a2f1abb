// Universal Auth of machine identities (the superadmin's API):
// /api/v1/auth/universal-auth/identities/:identityId (POST attach, GET, PATCH settings)
// [/client-secrets[/:clientSecretId[/revoke]]]. The settings are Infisical's: TTLs, the
// access-token use limit, and the trusted IP ranges for logins and for access tokens.
import { z } from 'zod';
import type { ClientSecretInfo, TrustedIp, UniversalAuthRow } from '../../../storage/identities.js';
import { parseIpRange } from '../../http/clientAddress.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { intField } from '../input.js';
import { isoString } from '../shape.js';

/**
 * Infisical's trusted-IP list: `[{ipAddress: "10.0.0.0/8"}, {ipAddress: "192.168.1.7"}]`,
 * at least one entry; stored and answered as `{ipAddress, type, prefix?}`.
 */
export const trustedIpsInput = (name: string) =>
  z
    .array(
      z.strictObject({
        ipAddress: z
          .string({ error: `${name}: ipAddress must be a string` })
          .trim()
          .max(64, `${name}: ipAddress must be at most 64 characters`)
          .transform((v, ctx): TrustedIp => {
            const r = parseIpRange(v);
            if (!r) {
              ctx.addIssue({ code: 'custom', message: 'The IP is not a valid IPv4, IPv6, or CIDR block' });
              return z.NEVER;
            }
            return r;
          }),
      }),
      { error: `${name} must be a list of {ipAddress}` },
    )
    .min(1, `${name} must hold at least one IP address or range`)
    .max(100, `${name} must hold at most 100 IP addresses or ranges`)
    .transform((list) => list.map((e) => e.ipAddress));

/**
 * `accessTokenPeriod` (periodic tokens) is not supported: 0, its default and "not
 * periodic", is what this service does and is accepted; any other value is refused.
 */
const accessTokenPeriod = z.literal(0, { error: 'accessTokenPeriod: periodic access tokens are not supported (only 0)' }).optional();

/**
 * Infisical's attach / update bodies, minus what is not supported: the lockout settings
 * (lockoutEnabled, lockoutThreshold, …) are the service's LOGIN_MAX_ATTEMPTS and
 * LOGIN_LOCKOUT_SECONDS here, so they are refused (422 naming the field) like any other
 * unknown field, never accepted and ignored.
 */
const uaBody = z.strictObject({
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
  accessTokenNumUsesLimit: intField('accessTokenNumUsesLimit').optional(),
  clientSecretTrustedIps: trustedIpsInput('clientSecretTrustedIps').optional(),
  accessTokenTrustedIps: trustedIpsInput('accessTokenTrustedIps').optional(),
  accessTokenPeriod,
});
const clientSecretBody = z.strictObject({
  description: z.string().max(256).optional(),
  ttl: intField('ttl').optional(),
  numUsesLimit: intField('numUsesLimit').optional(),
});

const settingsOf = (b: z.output<typeof uaBody>) => ({
  accessTokenTtl: b.accessTokenTTL,
  accessTokenMaxTtl: b.accessTokenMaxTTL,
  accessTokenNumUsesLimit: b.accessTokenNumUsesLimit,
  clientSecretTrustedIps: b.clientSecretTrustedIps,
  accessTokenTrustedIps: b.accessTokenTrustedIps,
});

/** Infisical's shape. This service keys Universal Auth by identity: `id` is the identity's id. */
function universalAuthJson(ua: UniversalAuthRow, orgId?: string) {
  return {
    id: ua.identityId,
    identityId: ua.identityId,
    clientId: ua.clientId,
    accessTokenTTL: ua.accessTokenTtl,
    accessTokenMaxTTL: ua.accessTokenMaxTtl,
    accessTokenNumUsesLimit: ua.accessTokenNumUsesLimit,
    accessTokenPeriod: 0,
    clientSecretTrustedIps: ua.clientSecretTrustedIps,
    accessTokenTrustedIps: ua.accessTokenTrustedIps,
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

export const trustedIps = z.array(z.object({ ipAddress: z.string(), type: z.enum(['ipv4', 'ipv6']), prefix: z.number().int().optional() }));
const oneUniversalAuth = z.object({
  identityUniversalAuth: z.object({
    id: z.string(),
    identityId: z.string(),
    clientId: z.string(),
    accessTokenTTL: z.number().int(),
    accessTokenMaxTTL: z.number().int(),
    accessTokenNumUsesLimit: z.number().int(),
    accessTokenPeriod: z.literal(0),
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
      const ua = await ids.attachUniversalAuth(actor, params.identityId, settingsOf(body), origin);
      return { body: { identityUniversalAuth: universalAuthJson(ua) } };
    },
  );

  api.patch(
    UA,
    {
      caller: 'any',
      summary: "Change an identity's Universal Auth settings (TTLs, access-token use limit, trusted IPs); absent fields are kept",
      body: uaBody,
      response: oneUniversalAuth,
    },
    async ({ actor, params, body, origin }) => {
      const ua = await ids.updateUniversalAuth(actor, params.identityId, settingsOf(body), origin);
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
