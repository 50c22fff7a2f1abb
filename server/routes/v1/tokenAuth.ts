// Token Auth of machine identities, at Infisical's paths and in its shapes:
// /api/v1/auth/token-auth/identities/:identityId (POST attach, GET, PATCH, DELETE),
// …/identities/:identityId/tokens (POST mint, GET list) and /api/v1/auth/token-auth/tokens/:tokenId
// (GET, PATCH rename, POST …/revoke). A minted token is in its create answer only; lists
// and reads show what identifies and limits it (ESO's tokenAuthCredentials, Terraform and
// the MCP server then use it as a bearer token).
import { z } from 'zod';
import type { TokenAuthRow, TokenAuthTokenRow } from '../../../storage/tokenAuth.js';
import type { TokenAuthInput } from '../../domain/tokenAuth.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { intField, queryInt } from '../input.js';
import { isoString } from '../shape.js';
import { trustedIps, trustedIpsInput } from './universalAuth.js';

const accessTokenPeriod = z.literal(0, { error: 'accessTokenPeriod: periodic access tokens are not supported (only 0)' }).optional();
const settingsBody = z.strictObject({
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
  accessTokenNumUsesLimit: intField('accessTokenNumUsesLimit').optional(),
  accessTokenTrustedIps: trustedIpsInput('accessTokenTrustedIps').optional(),
  accessTokenPeriod,
});
const settingsOf = (b: z.output<typeof settingsBody>): TokenAuthInput => ({
  accessTokenTtl: b.accessTokenTTL,
  accessTokenMaxTtl: b.accessTokenMaxTTL,
  accessTokenNumUsesLimit: b.accessTokenNumUsesLimit,
  accessTokenTrustedIps: b.accessTokenTrustedIps,
});

const name = z.string({ error: 'name must be a string' }).max(256, 'name must be at most 256 characters');
/** Infisical's organizationSlug (a sub-organization's scope) is not supported: refused by name, as any unknown field. */
const createTokenBody = z.strictObject({ name: name.optional() });
const renameBody = z.strictObject({ name: name.optional() });

const configShape = z.object({
  id: z.string(),
  identityId: z.string(),
  accessTokenTTL: z.number().int(),
  accessTokenMaxTTL: z.number().int(),
  accessTokenNumUsesLimit: z.number().int(),
  accessTokenPeriod: z.literal(0),
  accessTokenTrustedIps: trustedIps,
  createdAt: isoString,
  updatedAt: isoString,
});
const oneConfig = z.object({ identityTokenAuth: configShape });
/** This service keys the configuration by identity: `id` is the identity's id. */
const configJson = (r: TokenAuthRow): z.infer<typeof configShape> => ({
  id: r.identityId,
  identityId: r.identityId,
  accessTokenTTL: r.accessTokenTtl,
  accessTokenMaxTTL: r.accessTokenMaxTtl,
  accessTokenNumUsesLimit: r.accessTokenNumUsesLimit,
  accessTokenPeriod: 0,
  accessTokenTrustedIps: r.accessTokenTrustedIps,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** Infisical's identity access token row, minus what this service does not keep; never the token. */
const tokenShape = z.object({
  id: z.string(),
  name: z.string().nullable(),
  identityId: z.string(),
  authMethod: z.literal('token-auth'),
  accessTokenTTL: z.number().int(),
  accessTokenMaxTTL: z.number().int(),
  accessTokenNumUses: z.number().int(),
  accessTokenNumUsesLimit: z.number().int(),
  accessTokenPeriod: z.literal(0),
  isAccessTokenRevoked: z.boolean(),
  identityUAClientSecretId: z.null(),
  expiresAt: isoString,
  createdAt: isoString,
});
const tokenJson = (t: TokenAuthTokenRow): z.infer<typeof tokenShape> => ({
  id: t.id,
  name: t.name === '' ? null : t.name,
  identityId: t.identityId,
  authMethod: 'token-auth',
  accessTokenTTL: t.accessTokenTtl,
  accessTokenMaxTTL: t.accessTokenMaxTtl,
  accessTokenNumUses: t.numUses,
  accessTokenNumUsesLimit: t.numUsesLimit,
  accessTokenPeriod: 0,
  isAccessTokenRevoked: t.revokedAt !== null,
  identityUAClientSecretId: null,
  expiresAt: t.expiresAt.toISOString(),
  createdAt: t.createdAt.toISOString(),
});

const PATH = '/api/v1/auth/token-auth/identities/:identityId';

export function registerTokenAuthRoutes(api: Api, svc: Services) {
  const ta = svc.tokenAuth;
  api.post(
    PATH,
    { caller: 'any', summary: 'Attach Token Auth (TTLs, use limit, trusted IPs of the tokens it mints) to an identity', body: settingsBody, response: oneConfig },
    async ({ actor, params, body, origin }) => ({ body: { identityTokenAuth: configJson(await ta.attach(actor, params.identityId, settingsOf(body), origin)) } }),
  );

  api.patch(
    PATH,
    { caller: 'any', summary: "Change an identity's Token Auth settings; absent fields are kept", body: settingsBody, response: oneConfig },
    async ({ actor, params, body, origin }) => ({ body: { identityTokenAuth: configJson(await ta.update(actor, params.identityId, settingsOf(body), origin)) } }),
  );

  api.get(
    PATH,
    { caller: 'any', summary: "An identity's Token Auth configuration", response: oneConfig },
    async ({ actor, params }) => ({ body: { identityTokenAuth: configJson(await ta.get(actor, params.identityId)) } }),
  );

  api.delete(
    PATH,
    { caller: 'any', summary: 'Remove Token Auth from an identity; every token it minted stops working at once', response: oneConfig },
    async ({ actor, params, origin }) => ({ body: { identityTokenAuth: configJson(await ta.revoke(actor, params.identityId, origin)) } }),
  );

  api.post(
    `${PATH}/tokens`,
    {
      caller: 'any',
      summary: 'Mint an access token for the identity (shown once, in this answer only)',
      body: createTokenBody,
      response: z.object({ accessToken: z.string(), expiresIn: z.number().int(), accessTokenMaxTTL: z.number().int(), tokenType: z.literal('Bearer'), tokenData: tokenShape }),
    },
    async ({ actor, params, body, origin }) => {
      const { tokenData, ...issued } = await ta.createToken(actor, params.identityId, { name: body.name }, origin);
      // The one answer that ever carries the token.
      return { body: { ...issued, tokenData: tokenJson(tokenData) } };
    },
  );

  api.get(
    `${PATH}/tokens`,
    {
      caller: 'any',
      summary: "The identity's Token Auth tokens that are neither revoked nor expired, oldest first (never the tokens)",
      query: z.object({ offset: queryInt('offset', 0, 2_147_483_647).optional(), limit: queryInt('limit', 1, 100).optional() }),
      response: z.object({ tokens: z.array(tokenShape) }),
    },
    async ({ actor, params, query }) => ({
      body: { tokens: (await ta.listTokens(actor, params.identityId, { offset: query.offset ?? 0, limit: query.limit ?? 20 })).map(tokenJson) },
    }),
  );

  api.get(
    '/api/v1/auth/token-auth/tokens/:tokenId',
    { caller: 'any', summary: 'One Token Auth token (never the token)', response: z.object({ token: tokenShape }) },
    async ({ actor, params }) => ({ body: { token: tokenJson(await ta.getToken(actor, params.tokenId)) } }),
  );

  api.patch(
    '/api/v1/auth/token-auth/tokens/:tokenId',
    { caller: 'any', summary: 'Rename a Token Auth token', body: renameBody, response: z.object({ token: tokenShape }) },
    async ({ actor, params, body, origin }) => ({ body: { token: tokenJson(await ta.renameToken(actor, params.tokenId, body, origin)) } }),
  );

  api.post(
    '/api/v1/auth/token-auth/tokens/:tokenId/revoke',
    { caller: 'any', summary: 'Revoke a Token Auth token; every request with it gets 401 from now on', response: z.object({ message: z.string() }) },
    async ({ actor, params, origin }) => {
      await ta.revokeToken(actor, params.tokenId, origin);
      return { body: { message: 'Successfully revoked access token' } };
    },
  );
}
