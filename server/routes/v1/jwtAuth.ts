// JWT Auth of machine identities, at Infisical's paths and in its shapes:
// /api/v1/auth/jwt-auth/identities/:identityId (POST attach, GET, PATCH, DELETE) and
// POST /api/v1/auth/jwt-auth/login {identityId, jwt}. The keys are static PEM public
// keys ('static') or an issuer's JWKS ('jwks'). Shared with oidcAuth.ts: the bound-field
// inputs and shapes, and every route (registerTokenAuthRoutes).
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

function registerTokenLogin(api: Api, svc: Services, method: TokenAuthMethod, summary: string) {
  api.post(
    `/api/v1/auth/${method}/login`,
    { caller: 'none', summary, body: loginBody, unknownBodyFields: 'ignore', response: loginSchema },
    async ({ body, origin }) => ({ body: await svc.jwtAuth.login(method, { ...body, ip: origin.ip }) }),
  );
}

/** What JWT Auth and OIDC Auth differ in at /api/v1/auth/<method>/identities/:identityId. */
export interface TokenAuthRoutes<B> {
  method: TokenAuthMethod;
  /** "JWT Auth", "OIDC Auth": the summaries name it. */
  label: string;
  /** The answer's key (`identityJwtAuth`, `identityOidcAuth`). */
  key: string;
  loginSummary: string;
  attachSummary: string;
  attachBody: z.ZodType<B>;
  updateBody: z.ZodType<B>;
  input: (b: B) => JwtAuthInput;
  shape: z.ZodObject;
  json: (r: JwtAuthRow) => Record<string, unknown>;
  /** Fields the revoke answer leaves out (Infisical's JWT Auth revoke omits its key material). */
  omitOnRevoke?: readonly string[];
}

/** The login and the attach / update / read / revoke routes of one JWT-based method. */
export function registerTokenAuthRoutes<B>(api: Api, svc: Services, r: TokenAuthRoutes<B>) {
  const { method: m, key, json } = r;
  const path = `/api/v1/auth/${m}/identities/:identityId` as const;
  const one = z.object({ [key]: r.shape });
  const omit = r.omitOnRevoke ?? [];
  const kept = <T>(o: Record<string, T>) => Object.fromEntries(Object.entries(o).filter(([f]) => !omit.includes(f)));
  const revoked = z.object({ [key]: z.object(kept(r.shape.shape)) });
  registerTokenLogin(api, svc, m, r.loginSummary);

  api.post(
    path,
    { caller: 'any', summary: r.attachSummary, body: r.attachBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { [key]: json(await svc.jwtAuth.attach(actor, m, params.identityId, r.input(body), origin)) } }),
  );

  api.patch(
    path,
    { caller: 'any', summary: `Change an identity's ${r.label} configuration; absent fields are kept`, body: r.updateBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { [key]: json(await svc.jwtAuth.update(actor, m, params.identityId, r.input(body), origin)) } }),
  );

  api.get(
    path,
    { caller: 'any', summary: `An identity's ${r.label} configuration`, response: one },
    async ({ actor, params }) => ({ body: { [key]: json(await svc.jwtAuth.get(actor, m, params.identityId)) } }),
  );

  api.delete(
    path,
    { caller: 'any', summary: `Remove ${r.label} from an identity; the access tokens it issued stop working at once`, response: revoked },
    async ({ actor, params, origin }) => ({ body: { [key]: kept(json(await svc.jwtAuth.revoke(actor, m, params.identityId, origin))) } }),
  );
}

export function registerJwtAuthRoutes(api: Api, svc: Services) {
  registerTokenAuthRoutes(api, svc, {
    method: 'jwt-auth',
    label: 'JWT Auth',
    key: 'identityJwtAuth',
    loginSummary: 'JWT Auth: a JWT signed by a key the identity trusts, for an access token',
    attachSummary: 'Attach JWT Auth (static public keys or a JWKS URL) to an identity',
    attachBody,
    updateBody,
    input: jwtInput,
    shape: jwtShape,
    json: jwtJson,
    omitOnRevoke: ['publicKeys', 'jwksCaCert'],
  });
}
