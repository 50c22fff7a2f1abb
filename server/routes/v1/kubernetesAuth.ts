// Kubernetes Auth of machine identities, at Infisical's paths and in its shapes:
// /api/v1/auth/kubernetes-auth/identities/:identityId (POST attach, GET, PATCH, DELETE)
// and POST /api/v1/auth/kubernetes-auth/login {identityId, jwt} (ESO's
// kubernetesAuthCredentials, the operator, the CLI, Terraform).
//
// What Infisical accepts and this service does not do is refused by name (422), never
// accepted and ignored: tokenReviewMode 'gateway' and gateways (gatewayId, gatewayPoolId),
// verifyTlsCertificate false (the TokenReview is always verified), auth templates, periodic
// tokens. The values that ask for what this service does (tokenReviewMode 'api',
// verifyTlsCertificate true, a null gateway or template, accessTokenPeriod 0) are accepted.
import { z } from 'zod';
import type { KubernetesAuthRow } from '../../../storage/kubernetesAuth.js';
import type { KubernetesAuthInput } from '../../domain/kubernetesAuth.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { intField } from '../input.js';
import { isoString } from '../shape.js';
import { loginSchema } from './auth.js';
import { trustedIps, trustedIpsInput } from './universalAuth.js';

const text = (name: string, max: number) =>
  z.string({ error: `${name} must be a string` }).trim().max(max, `${name} must be at most ${max} characters`);

/** Infisical's fields that ask for nothing this service does not do, when given their "off" value. */
const compatFields = {
  tokenReviewMode: z.literal('api', { error: "tokenReviewMode: only 'api' is supported (the gateway is not)" }).optional(),
  gatewayId: z.null({ error: 'gatewayId: gateways are not supported' }).optional(),
  gatewayPoolId: z.null({ error: 'gatewayPoolId: gateway pools are not supported' }).optional(),
  templateId: z.null({ error: 'templateId: auth templates are not supported' }).optional(),
  verifyTlsCertificate: z.literal(true, { error: 'verifyTlsCertificate: the TokenReview is always verified (only true)' }).optional(),
  accessTokenPeriod: z.literal(0, { error: 'accessTokenPeriod: periodic access tokens are not supported (only 0)' }).optional(),
};

const fields = {
  caCert: text('caCert', 16_384).optional(),
  allowedNamespaces: text('allowedNamespaces', 4096).optional(),
  allowedNames: text('allowedNames', 4096).optional(),
  allowedAudience: text('allowedAudience', 1024).optional(),
  accessTokenTTL: intField('accessTokenTTL').optional(),
  accessTokenMaxTTL: intField('accessTokenMaxTTL').optional(),
  accessTokenNumUsesLimit: intField('accessTokenNumUsesLimit').optional(),
  accessTokenTrustedIps: trustedIpsInput('accessTokenTrustedIps').optional(),
  ...compatFields,
};
const host = z
  .string({ error: 'kubernetesHost is required (a Kubernetes host is needed for token review mode api)' })
  .trim()
  .min(1, 'kubernetesHost is required')
  .max(2048, 'kubernetesHost must be at most 2048 characters');
const attachBody = z.strictObject({ kubernetesHost: host, tokenReviewerJwt: text('tokenReviewerJwt', 16_384).optional(), ...fields });
const updateBody = z.strictObject({ kubernetesHost: host.optional(), tokenReviewerJwt: text('tokenReviewerJwt', 16_384).nullable().optional(), ...fields });

const input = (b: z.output<typeof updateBody>): KubernetesAuthInput => ({
  kubernetesHost: b.kubernetesHost,
  caCert: b.caCert,
  tokenReviewerJwt: b.tokenReviewerJwt,
  allowedNamespaces: b.allowedNamespaces,
  allowedNames: b.allowedNames,
  allowedAudience: b.allowedAudience,
  accessTokenTtl: b.accessTokenTTL,
  accessTokenMaxTtl: b.accessTokenMaxTTL,
  accessTokenNumUsesLimit: b.accessTokenNumUsesLimit,
  accessTokenTrustedIps: b.accessTokenTrustedIps,
});

const shape = z.object({
  id: z.string(),
  identityId: z.string(),
  kubernetesHost: z.string(),
  caCert: z.string(),
  /** Never answered: '' always (a configured one is sealed and stays inside the service). */
  tokenReviewerJwt: z.literal(''),
  tokenReviewMode: z.literal('api'),
  allowedNamespaces: z.string(),
  allowedNames: z.string(),
  allowedAudience: z.string(),
  gatewayId: z.null(),
  accessTokenTTL: z.number().int(),
  accessTokenMaxTTL: z.number().int(),
  accessTokenNumUsesLimit: z.number().int(),
  accessTokenPeriod: z.literal(0),
  accessTokenTrustedIps: trustedIps,
  createdAt: isoString,
  updatedAt: isoString,
});
const one = z.object({ identityKubernetesAuth: shape });

/** This service keys the configuration by identity: `id` is the identity's id. */
const json = (r: KubernetesAuthRow): z.infer<typeof shape> => ({
  id: r.identityId,
  identityId: r.identityId,
  kubernetesHost: r.kubernetesHost,
  caCert: r.caCert,
  tokenReviewerJwt: '',
  tokenReviewMode: 'api',
  allowedNamespaces: r.allowedNamespaces,
  allowedNames: r.allowedNames,
  allowedAudience: r.allowedAudience,
  gatewayId: null,
  accessTokenTTL: r.accessTokenTtl,
  accessTokenMaxTTL: r.accessTokenMaxTtl,
  accessTokenNumUsesLimit: r.accessTokenNumUsesLimit,
  accessTokenPeriod: 0,
  accessTokenTrustedIps: r.accessTokenTrustedIps,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** Infisical's login body; organizationSlug and unknown fields are ignored, as on the other logins. */
const loginBody = z.object({
  identityId: z.string({ error: 'identityId is required' }).trim().min(1, 'identityId is required').max(64, 'identityId must be at most 64 characters'),
  jwt: z.string({ error: 'jwt is required' }).trim().min(1, 'jwt is required').max(16_384, 'jwt must be at most 16384 characters'),
});

const PATH = '/api/v1/auth/kubernetes-auth/identities/:identityId';

export function registerKubernetesAuthRoutes(api: Api, svc: Services) {
  const k8s = svc.kubernetesAuth;
  api.post(
    '/api/v1/auth/kubernetes-auth/login',
    {
      caller: 'none',
      summary: "Kubernetes Auth: a service account token, reviewed by the cluster's TokenReview API, for an access token",
      body: loginBody,
      unknownBodyFields: 'ignore',
      response: loginSchema,
    },
    async ({ body, origin }) => ({ body: await k8s.login({ ...body, ip: origin.ip }) }),
  );

  api.post(
    PATH,
    { caller: 'any', summary: 'Attach Kubernetes Auth (API server, CA, token reviewer JWT, bindings) to an identity', body: attachBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { identityKubernetesAuth: json(await k8s.attach(actor, params.identityId, input(body), origin)) } }),
  );

  api.patch(
    PATH,
    { caller: 'any', summary: "Change an identity's Kubernetes Auth configuration; absent fields are kept (tokenReviewerJwt null: the caller's token reviews itself)", body: updateBody, response: one },
    async ({ actor, params, body, origin }) => ({ body: { identityKubernetesAuth: json(await k8s.update(actor, params.identityId, input(body), origin)) } }),
  );

  api.get(
    PATH,
    { caller: 'any', summary: "An identity's Kubernetes Auth configuration (never the token reviewer JWT)", response: one },
    async ({ actor, params }) => ({ body: { identityKubernetesAuth: json(await k8s.get(actor, params.identityId)) } }),
  );

  api.delete(
    PATH,
    { caller: 'any', summary: 'Remove Kubernetes Auth from an identity; the access tokens it issued stop working at once', response: one },
    async ({ actor, params, origin }) => ({ body: { identityKubernetesAuth: json(await k8s.revoke(actor, params.identityId, origin)) } }),
  );
}
