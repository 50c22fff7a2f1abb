// OIDC Auth of machine identities, at Infisical's paths and in its shapes:
// /api/v1/auth/oidc-auth/identities/:identityId (POST attach, GET, PATCH, DELETE) and
// POST /api/v1/auth/oidc-auth/login {identityId, jwt}. The keys come from the provider's
// discovery document (`${oidcDiscoveryUrl}/.well-known/openid-configuration` → jwks_uri).
// Infisical's claimMetadataMapping is not supported: refused (422) like any unknown field.
import { z } from 'zod';
import type { JwtAuthRow } from '../../../storage/jwtAuth.js';
import type { JwtAuthInput } from '../../domain/jwtAuth.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { boundFields, boundInput, commonJson, commonShape, registerTokenAuthRoutes } from './jwtAuth.js';

const oidcFields = {
  caCert: z.string({ error: 'caCert must be a string' }).trim().max(16_384, 'caCert must be at most 16384 characters').optional(),
  ...boundFields,
};
const discoveryUrl = z.string({ error: 'oidcDiscoveryUrl is required' }).trim().min(1, 'oidcDiscoveryUrl is required').max(2048);
const attachBody = z.strictObject({ oidcDiscoveryUrl: discoveryUrl, ...oidcFields });
const updateBody = z.strictObject({ oidcDiscoveryUrl: discoveryUrl.optional(), ...oidcFields });

const oidcInput = (b: z.output<typeof updateBody>): JwtAuthInput => ({ oidcDiscoveryUrl: b.oidcDiscoveryUrl, caCert: b.caCert, ...boundInput(b) });

const oidcShape = z.object({ ...commonShape, oidcDiscoveryUrl: z.string(), caCert: z.string() });
const oidcJson = (r: JwtAuthRow) => ({ ...commonJson(r), oidcDiscoveryUrl: r.oidcDiscoveryUrl, caCert: r.caCert });

export function registerOidcAuthRoutes(api: Api, svc: Services) {
  registerTokenAuthRoutes(api, svc, {
    method: 'oidc-auth',
    label: 'OIDC Auth',
    key: 'identityOidcAuth',
    loginSummary: "OIDC Auth: an ID token of the identity's OIDC provider, for an access token",
    attachSummary: 'Attach OIDC Auth (a provider found by its discovery URL) to an identity',
    attachBody,
    updateBody,
    input: oidcInput,
    shape: oidcShape,
    json: oidcJson,
  });
}
