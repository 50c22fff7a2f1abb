// Universal Auth login, access token revoke / renew, and a person's logout.
import { z } from 'zod';
import { clearedSessionCookie } from '../../auth/authenticate.js';
import { AppError } from '../../errors.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';

/**
 * A trimmed, non-empty string of at most `max` characters. Each failure says what is wrong:
 * a schema-level `error` alone would also word the length check as "is required".
 */
const trimmed = (name: string, max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `${name} is required` : `${name} must be a string`) })
    .trim()
    .min(1, `${name} is required`)
    .max(max, `${name} must be at most ${max} characters`);

const loginBody = z.object({ clientId: trimmed('clientId', 512), clientSecret: trimmed('clientSecret', 512) });
// Our tokens are ~480 characters today; the cap leaves room for more claims (and for
// other issuers' tokens, which the verifier refuses with a 401, not a 422).
const tokenBody = z.object({ accessToken: trimmed('accessToken', 8192) });

/** Infisical's login answer: integers, never a max TTL of 0. */
export const loginSchema = z.object({
  accessToken: z.string(),
  expiresIn: z.number().int(),
  accessTokenMaxTTL: z.number().int(),
  tokenType: z.literal('Bearer'),
});
const messageSchema = z.object({ message: z.string() });

export function registerAuthRoutes(api: Api, svc: Services) {
  api.post(
    '/api/v1/auth/universal-auth/login',
    {
      caller: 'none',
      summary: 'Universal Auth: client id and secret for an access token',
      body: loginBody,
      // CONTRACT.md: ignore organizationSlug and unknown fields (clients send extra ones).
      unknownBodyFields: 'ignore',
      response: loginSchema,
    },
    async ({ body, origin }) => ({ body: await svc.machineAuth.login({ ...body, ip: origin.ip }) }),
  );

  api.post(
    '/api/v1/auth/token/revoke',
    { caller: 'none', summary: 'Revoke an access token (the token is its own proof)', body: tokenBody, response: messageSchema },
    async ({ body, origin }) => {
      await svc.machineAuth.revoke(body.accessToken, origin);
      return { body: { message: 'Successfully revoked access token' } };
    },
  );

  api.post(
    '/api/v1/auth/token/renew',
    { caller: 'none', summary: 'Renew an access token, up to its maximum lifetime', body: tokenBody, response: loginSchema },
    async ({ body, origin }) => ({ body: await svc.machineAuth.renew(body.accessToken, origin) }),
  );

  api.post(
    '/api/v1/auth/logout',
    {
      caller: 'user',
      summary: "End the caller's session",
      refuseMachine: () => new AppError('BAD_REQUEST', 'Machine identities revoke their token with /api/v1/auth/token/revoke'),
      // The body is not read: a logout never fails on what came with it.
      unknownBodyFields: 'ignore',
      response: messageSchema,
    },
    async ({ actor, origin, req }) => {
      await svc.users.logout(actor, origin);
      return {
        headers: { 'Set-Cookie': clearedSessionCookie(req, svc.config.cookieSecure) },
        body: { message: 'Successfully logged out' },
      };
    },
  );
}
