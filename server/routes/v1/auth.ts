// Universal Auth login, and access token revoke / renew.
import { z } from 'zod';
import { parseJsonBody } from '../../http/body.js';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse } from '../input.js';

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

export function registerAuthRoutes(router: Router, svc: Services) {
  router.post('/api/v1/auth/universal-auth/login', async (req) => {
    const body = parse(loginBody, parseJsonBody(req));
    return { body: await svc.machineAuth.login(body) };
  });

  router.post('/api/v1/auth/token/revoke', async (req) => {
    const body = parse(tokenBody, parseJsonBody(req));
    await svc.machineAuth.revoke(body.accessToken);
    return { body: { message: 'Successfully revoked access token' } };
  });

  router.post('/api/v1/auth/token/renew', async (req) => {
    const body = parse(tokenBody, parseJsonBody(req));
    return { body: await svc.machineAuth.renew(body.accessToken) };
  });
}
