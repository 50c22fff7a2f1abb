// Universal Auth login, and access token revoke / renew.
import { z } from 'zod';
import { parseJsonBody } from '../../http/body.js';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse } from '../input.js';

const trimmed = (name: string) => z.string({ error: `${name} is required` }).trim().min(1, `${name} is required`).max(512);

const loginBody = z.object({ clientId: trimmed('clientId'), clientSecret: trimmed('clientSecret') });
const tokenBody = z.object({ accessToken: trimmed('accessToken').max(8192) });

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
