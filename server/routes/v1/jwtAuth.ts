// JWT Auth of machine identities, at Infisical's paths and in its shapes:
// /api/v1/auth/jwt-auth/identities/:identityId (POST attach, GET, PATCH, DELETE) and
// POST /api/v1/auth/jwt-auth/login {identityId, jwt}. The keys are static PEM public
// keys ('static') or an issuer's JWKS ('jwks'). Shared with oidcAuth.ts: the bound-field
// inputs, the login body and the login route.
import { z } from 'zod';
import type { JwtAuthRow } from '../../../storage/jwtAuth.js';
import type { JwtAuthInput, TokenAuthMethod } from '../../domain/jwtAuth.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { intField } from '../input.js';
import { isoString } from '../shape.js';
import { loginSchema } from './auth.js';
import { trustedIps, trustedIpsInput } from './universalAuth.js';

const text = (name: string, max: number) =>
  z.string({ error: `${name} must be a string` }).trim().max(max, `${name} must be at most ${max} characters`);

/** The fields both methods share (Infisical's CreateBaseSchema), each optional. */
export const boundFields = {
  boundIssuer: text('boundIssuer', 1024).optional(),
  boundAudiences: text('boundAudiences', 4096).optional(),
  boundClaims: z
    .record(z.string().max(256, 'boundClaims: claim names are at most 256 characters'), z.string({ error: 'boundClaims: values must be strings' }).max(2048))
    .optional(),
  boundSubject: text('boundSubject', 1024).optional(),
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
  accessTokenNumUsesLimit: intField('accessTokenNumUsesLimit').optional(),
  accessTokenTrustedIps: trustedIpsInput('accessTokenTrustedIps').optional(),
};

type BoundFields = { [K in keyof typeof boundFields]?: z.output<(typeof boundFields)[K]> };

export const boundInput = (b: BoundFields): JwtAuthInput => ({
  boundIssuer: b.boundIssuer,
  boundAudiences: b.boundAudiences,
  boundClaims: b.boundClaims,
  boundSubject: b.boundSubject,
  accessTokenTtl: b.accessTokenTTL,
  accessTokenMaxTtl: b.accessTokenMaxTTL,
  accessTokenNumUsesLimit: b.accessTokenNumUsesLimit,
  accessTokenTrustedIps: b.accessTokenTrustedIps,
});

const pem = (name: string) => z.string({ error: `${name} must be a string` }).trim().max(16_384, `${name} must be at most 16384 characters`);
const configurationType = z.enum(['static', 'jwks'], { error: "configurationType must be 'static' or 'jwks'" });
const jwtFields = {
  jwksUrl: text('jwksUrl', 2048).optional(),
  jwksCaCert: pem('jwksCaCert').optional(),
  publicKeys: z.array(pem('publicKeys[]'), { error: 'publicKeys must be a list of PEM public keys' }).max(20, 'publicKeys: at most 20 keys').optional(),
  ...boundFields,
};
const attachBody = z.strictObject({ configurationType, ...jwtFields });
const updateBody = z.strictObject({ configurationType: configurationType.optional(), ...jwtFields });

const jwtInput = (b: z.output<typeof updateBody>): JwtAuthInput => ({
  configurationType: b.configurationType,
  jwksUrl: b.jwksUrl,
  caCert: b.jwksCaCert,
  publicKeys: b.publicKeys,
  ...boundInput(b),
});

/** The fields both methods answer with (Infisical's identity*Auth rows). */
export const commonShape = {
  id: z.string(),
  identityId: z.string(),
  boundIssuer: z.string(),
  boundAudiences: z.string(),
  boundClaims: z.record(z.string(), z.string()),
  boundSubject: z.string(),
  accessTokenTTL: z.number().int(),
  accessTokenMaxTTL: z.number().int(),
  accessTokenNumUsesLimit: z.number().int(),
  accessTokenTrustedIps: trustedIps,
  createdAt: isoString,
  updatedAt: isoString,
};

/** This service keys the configuration by identity: `id` is the identity's id. */
export const commonJson = (r: JwtAuthRow) => ({
  id: r.identityId,
  identityId: r.identityId,
  boundIssuer: r.boundIssuer,
  boundAudiences: r.boundAudiences,
  boundClaims: r.boundClaims,
  boundSubject: r.boundSubject,
  accessTokenTTL: r.accessTokenTtl,
  accessTokenMaxTTL: r.accessTokenMaxTtl,
  accessTokenNumUsesLimit: r.accessTokenNumUsesLimit,
  accessTokenTrustedIps: r.accessTokenTrustedIps,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const jwtShape = z.object({
  ...commonShape,
  configurationType: z.enum(['static', 'jwks']),
  jwksUrl: z.string(),
  jwksCaCert: z.string(),
  publicKeys: z.array(z.string()),
});
const jwtJson = (r: JwtAuthRow) => ({
  ...commonJson(r),
  configurationType: r.configurationType ?? 'static',
  jwksUrl: r.jwksUrl,
  jwksCaCert: r.caCert,
  publicKeys: r.publicKeys,
});

/** Infisical's login body; organizationSlug and unknown fields are ignored, as on Universal Auth's login. */
const loginBody = z.object({
  identityId: z.string({ error: 'identityId is required' }).trim().min(1, 'identityId is required').max(64, 'identityId must be at most 64 characters'),
  jwt: z.string({ error: 'jwt is required' }).trim().min(1, 'jwt is required').max(16_384, 'jwt must be at most 16384 characters'),
});

export function registerTokenLogin(api: Api, svc: Services, method: TokenAuthMethod, summary: string) {
  api.post(
    `/api/v1/auth/${method}/login`,
    { caller: 'none', summary, body: loginBody, unknownBodyFields: 'ignore', response: loginSchema },
    async ({ body, origin }) => ({ body: await svc.jwtAuth.login(method, { ...body, ip: origin.ip }) }),
  );
}

const JWT = '/api/v1/auth/jwt-auth/identities/:identityId';

export function registerJwtAuthRoutes(api: Api, svc: Services) {
  const one = z.object({ identityJwtAuth: jwtShape });
  const m = 'jwt-auth';
  registerTokenLogin(api, svc, m, 'JWT Auth: a JWT signed by a key the identity trusts, for an access token');

  api.post(
    JWT,
    { caller: 'any', summary: 'Attach JWT Auth (static public keys or a JWKS URL) to an identity', body: attachBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { identityJwtAuth: jwtJson(await svc.jwtAuth.attach(actor, m, params.identityId, jwtInput(body), origin)) } }),
  );

  api.patch(
    JWT,
    { caller: 'any', summary: "Change an identity's JWT Auth configuration; absent fields are kept", body: updateBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { identityJwtAuth: jwtJson(await svc.jwtAuth.update(actor, m, params.identityId, jwtInput(body), origin)) } }),
  );

  api.get(
    JWT,
    { caller: 'any', summary: "An identity's JWT Auth configuration", response: one },
    async ({ actor, params }) => ({ body: { identityJwtAuth: jwtJson(await svc.jwtAuth.get(actor, m, params.identityId)) } }),
  );

  api.delete(
    JWT,
    {
      caller: 'any',
      summary: 'Remove JWT Auth from an identity; the access tokens it issued stop working at once',
      response: z.object({ identityJwtAuth: jwtShape.omit({ publicKeys: true, jwksCaCert: true }) }),
    },
    async ({ actor, params, origin }) => {
      const { publicKeys: _k, jwksCaCert: _c, ...rest } = jwtJson(await svc.jwtAuth.revoke(actor, m, params.identityId, origin));
      return { body: { identityJwtAuth: rest } };
    },
  );
}
